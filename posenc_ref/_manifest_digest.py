"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "6fec70c72f9fd658ee35eb664d8b6b6cff0eb413608f0cd24281118d29b91cc9"
