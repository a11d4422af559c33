"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "295e384fee07e68b9ce0b9198d6051d11e179156e0cc9cb1effbabb08f3cfcae"
