"""Generated protobuf modules for the Lance messages in protos/ (do not edit)."""
