"""Course tooling: what the chapters use around the data path, never on it.

* :mod:`tokvec.course.feedback` -- feedback on a learner's own answer (exercises of chapters 2,
  5, 7 and 8): ``feedback.on_sinusoidal_table(my_table)`` and friends;
* :mod:`tokvec.course.display`  -- :func:`show_source`, the package's real code on the page;
* :mod:`tokvec.course.student`  -- ``make student``: student notebooks generated from the chapters;
* :func:`versions` (from :mod:`tokvec.environment`) -- printed at the top of every chapter.
"""

from tokvec.course import feedback
from tokvec.course.display import show_source
from tokvec.environment import versions

__all__ = ["feedback", "show_source", "versions"]
