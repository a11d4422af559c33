"""The sha256 of the golden manifest this version of posenc-ref ships.

Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); never edit by hand.
"""

MANIFEST_SHA256 = "be4f81e57dd77f7c35e94d03bf769354b825a4a8414bb20c41469a1ee6380fb6"
