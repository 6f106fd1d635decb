"""Host memory of a training run, phase by phase."""
