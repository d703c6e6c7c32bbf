"""The Decode page's parts: its sidebar, the step controller, what is drawn of a step and of the run, "Your draft", the
quiz, the keys, reading a trace, reruns of its fragment."""
