"""The service, the daemon and one-document predict: latency and load; damaged model files."""
