"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "f5ed80add05c09203ec132a9bbb3df2ac1c831abeff1e326a3807c4fee2e38da"
