"""The code of the course's source tutorials 002 to 004, kept once, as they wrote it, errors included.

The chapters correct these tutorials, so they show and run the tutorials' own code, never a
retyped copy: every chapter and test imports it from here. One module per tutorial (the numbers
are the file names in the course's sources):

* :mod:`tokvec.tutorials.tutorial_002` -- "Positional Encodings" in PyTorch: ``positional_encoding``
  (chapters 7, 8 and 9: its table is computed in float32 and drifts at large positions);
* :mod:`tokvec.tutorials.tutorial_003` -- Phuong & Hutter's algorithms in plain Python:
  ``generate_token_embedding_matrix``, ``generate_positional_embedding_matrix``,
  ``embed_by_position``, ``sentence_embedding`` (chapters 3 and 7: a constant "embedding"
  matrix, and a frequency that changes inside every sin/cos pair);
* :mod:`tokvec.tutorials.tutorial_004` -- the ``InputEmbeddings`` module (chapter 9 and the appendix on
  frameworks: the ``sqrt(d_model)`` factor on ``nn.Embedding``'s ``N(0, 1)`` start).

Each is identified (title, framework, form; their authors and addresses were not supplied with the
texts) on the book's page "The source tutorials" (``sources.md``). Tutorials 000 and 001 are written for JAX/Haiku; chapter 9 translates their positional encoding
to PyTorch in the open rather than pretending it is theirs.

"Verbatim" means token for token. Two things may differ, so that no line of code on the site
is wider than the code column: a long expression is broken inside its parentheses, and a
comment at the end of a long line is moved onto its own line above it.
"""
