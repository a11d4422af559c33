"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "2a0caa96a9c3058e8fd7ba70eb0d193b998bbc6d7b19a45cbe1708667dc8baac"
