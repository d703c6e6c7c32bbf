"""Serving a class from one machine: the server's configuration read once (config), the class policy
(class_policy), turns at the CPU (turns), the pairs held and their memory (paircache), the Decode page's click
queue (stepper). Modules import what they need from here by name; this file imports nothing."""
