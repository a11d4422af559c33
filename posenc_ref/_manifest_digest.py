"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "f10d545cafd5c92b4fab859f753e2b8889ca9a56598b612b4b62d1aab9369157"
