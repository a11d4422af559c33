"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "af48b1ceab7557c3947ce0fcb85d887db06ea936203675d9a38b8f07e01cc8a8"
