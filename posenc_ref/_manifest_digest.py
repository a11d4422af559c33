"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "3a12453d7576a4d198c77e1bf38591d2c71a2acde0adf4999b4627e1dc8728a0"
