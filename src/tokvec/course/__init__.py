"""Course tooling: what the chapters use around the data path, never on it.

* :mod:`tokvec.course.feedback` -- feedback on a learner's own answer (exercises of chapters 2,
  5, 7 and 8): ``feedback.on_sinusoidal_table(my_table)`` and friends;
* :mod:`tokvec.course.display`  -- :func:`show_source`, the package's real code on the page, and
  :func:`error_text` / :func:`fit`, printed messages wrapped to the width of the page;
* :mod:`tokvec.course.student`  -- ``make student``: student notebooks generated from the chapters;
* :func:`versions` (from :mod:`tokvec.environment`) -- printed at the top of every chapter.
"""

from tokvec.course import feedback
from tokvec.course.display import error_text, fit, show_source
from tokvec.environment import versions

__all__ = ["error_text", "feedback", "fit", "show_source", "versions"]
