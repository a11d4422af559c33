"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "07e7576db934783037e1349eaf2901e8c51c59a9dbfb7f0b16b88ad96407428d"
