"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "b90481059cfde13a2c5ac899cdfb298b4034770f9aad2b62fd67722e5d7f4abd"
