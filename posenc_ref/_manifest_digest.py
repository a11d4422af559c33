"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "f2ba96fc7c24385b4dd255b6f927f11982173fbda7c86abfe9b5bf1e8bff7bf6"
