"""Shared test settings.

Hypothesis runs derandomized (the same examples on every run) so that CI is reproducible; set
HYPOTHESIS_PROFILE=explore to search with fresh random examples.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=200)
settings.register_profile("explore", deadline=None, max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
