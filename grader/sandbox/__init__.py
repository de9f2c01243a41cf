"""The sandbox's trusted side: opening a confined worker, talking to it, decoding its replies."""
