"""Classroom tools: the settings registry, links, the quiz, the sandbox, replay of saved traces, and
the fair queue for a shared CPU."""
