"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "6211c411a572cca43e9324426de16d55e85a3f2d72d01c2851ee5bbcbed88181"
