"""Accuracy beside the peers, and the model search's rules judged on training documents alone."""
