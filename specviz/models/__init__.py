"""Models behind the protocol: sessions (lm), loading pairs (loading), the offline default target
(embedded), the pair (pair) and text codecs (text)."""
