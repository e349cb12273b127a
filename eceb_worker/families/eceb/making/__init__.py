"""Making an ECEB-0.1 run (``eceb run``): the pure part.

eceb drives the user's context system, a model and a judge through every
task, strategy, budget and repetition of a benchmark, and records what they
did as a run (ECEB-0.1 §7, §8). This package holds what needs no I/O:

- :mod:`.protocol`: the context-system protocol (request and response).
- :mod:`.exchange`: what eceb asks of a model provider, a context system and
  a judge, as Structs and small Protocols the adapters implement.
- :mod:`.profile`: the run profile, the user's declaration of the model,
  judge, context system, prompt template, pricing and spending limits.
"""
