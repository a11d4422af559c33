"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "ff4505dfb4d3f65eea2333e7ccde9065ba4648e9d89a93151b0f6c9f4f6b23c9"
