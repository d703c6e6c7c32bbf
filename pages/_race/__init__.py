"""The Race page's parts: the greedy race and its verdict."""
