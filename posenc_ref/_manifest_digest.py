"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "e97368341434292e9ed3b9cce7699077c6c5384ad7fd6c5014dc8f5ac2ccc935"
