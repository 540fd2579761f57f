"""The course's drawn diagrams: one function per figure, each drawn with matplotlib from the package.

Used by ``make figures``, which writes every figure into ``chapters/figures/``::

    python -m tokvec.course.figures OUTDIR [NAME ...]

For each figure ``OUTDIR/<name>.svg`` is what the site shows and ``OUTDIR/<name>.png`` (about
1,400 pixels wide) what the student notebooks embed (:mod:`tokvec.course.student` turns every
``![alt](figures/<name>.svg)`` of a chapter into an attachment of that PNG, so the notebooks show
their figures offline and in Colab). The chapters show the SVGs as Markdown images with alt text.

A diagram is a drawing of structure, not a plot of data, but its numbers are the chapters' own:
every id, token, shape and value comes from the package (``tokvec.text``, ``tokvec.vocab``,
``tokvec.reference``, ``tokvec.bytebpe``) computed as the chapter computes it, so a change that
moves a chapter's output moves its figure the next time ``make figures`` runs, and
``tests/test_figures.py`` fails until the figures are regenerated.

The output is deterministic (a fixed hash salt, no date, glyphs written as paths in DejaVu Sans,
which ships with matplotlib), so the SVGs can be committed and compared byte for byte. Every
figure is drawn on an opaque white background with dark ink, legible in the site's light and dark
themes and in print; colours are Okabe-Ito tints that only repeat what a label, a hatch or a
heavier outline already says, so a figure reads the same in greyscale.
"""

from __future__ import annotations

import argparse
import io
import math
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from functools import cache
from pathlib import Path

try:
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, FancyArrowPatch, Rectangle
    from PIL import Image  # Pillow: a dependency of matplotlib
except ImportError:                       # pragma: no cover - requirements.txt pins matplotlib
    raise ImportError("tokvec.course.figures needs matplotlib: pip install matplotlib") from None

__all__ = ["CHAPTER_STAGES", "FIGURES", "STAGES", "draw", "main", "pipeline", "save", "write_all"]

# --- style -----------------------------------------------------------------------------------

INK = "#1a1a1a"          # text and outlines: dark on the white background, in both site themes
MUTED = "#595959"        # secondary text, still 7:1 against white
FAINT = "#9a9a9a"        # outlines of what is there but not the point
WHITE = "#ffffff"
# Okabe-Ito tints (colour-blind safe); a tint never carries meaning alone
TOKEN = "#cfe6f5"        # text and tokens (blue)
ID = "#fde3b0"           # ids (orange)
VECTOR = "#c4eadb"       # token vectors, the columns W_e[:, v] (green)
POSITION = "#f1d4e5"     # positions, W_p (purple), always hatched as well
SUM = "#e4e4e4"          # sums and tensors (grey)
HERE = "#e69f00"         # "you are here" and the point of a figure (orange), always hatched as well
MONO = "DejaVu Sans Mono"
PNG_WIDTH_PX = 1400

RC = {
    "svg.hashsalt": "tokvec-figures",     # the ids of clip paths and glyphs: fixed, not random
    "svg.fonttype": "path",              # no font needed to view the SVG, and no font drift
    "font.family": "DejaVu Sans",        # ships with matplotlib: the same glyphs on every machine
    "mathtext.fontset": "dejavusans",
    "font.size": 10,
    "hatch.linewidth": 0.7,
    "axes.unicode_minus": True,
    "path.simplify": False,
}


@contextmanager
def _style():
    """matplotlib's own defaults (not a user's matplotlibrc, nor what other code changed), then :data:`RC`."""
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(RC)
        yield


def _canvas(width: float, height: float):
    """A figure ``width`` x ``height`` inches whose data coordinates are inches from the bottom left."""
    fig = Figure(figsize=(width, height), facecolor=WHITE)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    ax.patch.set_facecolor(WHITE)
    return fig, ax


def _text(ax, x, y, s, *, size=10, color=INK, ha="center", va="center", mono=False, weight="normal",
          style="normal", bg=None, zorder=5, **kw):
    bbox = dict(facecolor=bg, edgecolor="none", pad=1.0) if bg else None
    return ax.text(x, y, s, fontsize=size, color=color, ha=ha, va=va, fontweight=weight, fontstyle=style,
                   family=MONO if mono else "DejaVu Sans", bbox=bbox, zorder=zorder, **kw)


def _box(ax, x, y, w, h, label="", *, fill=WHITE, edge=INK, lw=1.0, hatch=None, size=10, mono=False,
         weight="normal", color=INK, ls="-", zorder=2, label_bg=None):
    """A rectangle with its bottom left at (x, y) and ``label`` in its middle."""
    ax.add_patch(Rectangle((x, y), w, h, facecolor=fill, edgecolor=edge, linewidth=lw, hatch=hatch,
                           hatchcolor=MUTED if hatch else None, linestyle=ls, zorder=zorder))
    if label != "":
        _text(ax, x + w / 2, y + h / 2, str(label), size=size, mono=mono, weight=weight, color=color,
              bg=label_bg if label_bg else (WHITE if hatch else None), zorder=zorder + 1)


def _arrow(ax, start, end, *, color=INK, lw=1.2, style="-|>", ls="-", rad=0.0, scale=12, zorder=4):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=scale, color=color, linewidth=lw,
                                 linestyle=ls, shrinkA=0, shrinkB=0, zorder=zorder,
                                 connectionstyle=f"arc3,rad={rad}"))


def _vector_strip(ax, x, y, w, h, n, *, fill, hatch=None, edge=INK, lw=0.8, zorder=2):
    """``n`` cells side by side: one vector of ``n`` numbers drawn as a row."""
    cw = w / n
    for k in range(n):
        _box(ax, x + k * cw, y, cw, h, fill=fill, hatch=hatch, edge=edge, lw=lw, zorder=zorder)


def _column(ax, x, y_top, w, h, values, *, fill, hatch=None, lw=0.8, size=7.5, digits=2, edge=INK,
            weight="normal"):
    """A column vector: ``len(values)`` cells from ``y_top`` downwards, each ``h`` high."""
    for k, value in enumerate(values):
        label = value if isinstance(value, str) else f"{value:.{digits}f}"
        _box(ax, x, y_top - (k + 1) * h, w, h, label, fill=fill, hatch=hatch, lw=lw, size=size, mono=True,
             edge=edge, weight=weight)


def _slab_stack(ax, x, y, w, h, n, dx, dy, *, fill, hatch=None, ls="-", edge=INK, lw=1.0, front=None,
                dims=None):
    """``n`` copies of a w x h rectangle, each shifted by (dx, dy) behind the one before: a 3-d block.
    Drawn back to front, so the front face (at x, y) is on top; ``front`` overrides the front face's
    style (a dict of :func:`_box` options), ``dims`` names the three axes: (across, up, depth)."""
    for k in reversed(range(n)):
        style = dict(fill=fill, hatch=hatch, ls=ls, edge=edge, lw=lw)
        if k == 0 and front:
            style.update(front)
        _box(ax, x + k * dx, y + k * dy, w, h, zorder=2 + 2 * (n - k), **style)
    if dims:            # outside the block, legible at a page's width: across under it, depth at its back
        across, up, depth = dims
        _text(ax, x + w / 2, y - 0.03, across, size=11, weight="bold", va="top")
        _text(ax, x - 0.07, y + h / 2, up, size=11, weight="bold", ha="right")
        _text(ax, x + w + (n - 1) * dx + 0.07, y + h + (n - 1) * dy - 0.02, depth, size=11, weight="bold",
              ha="left", va="top")


# --- the data the figures draw, computed as the chapters compute it --------------------------

@cache
def _corpus() -> str:
    from tokvec.text import load_corpus

    return load_corpus()


@cache
def _bpe_example():
    """Chapters 1 and 2: BPE with 400 symbols on the corpus, its vocabulary, the running sentence."""
    from tokvec.text import BPE, SENTENCE, pretokenize
    from tokvec.vocab import Vocabulary

    bpe = BPE.train(_corpus(), vocab_size=400)
    vocab = Vocabulary(bpe.vocab)
    tokens = bpe.tokenize(SENTENCE)
    return SENTENCE, pretokenize(SENTENCE), tokens, vocab.encode(tokens)


@cache
def _word_vocab():
    """Chapters 2 to 9: the word vocabulary of the corpus (848 tokens)."""
    from tokvec.text import normalize, word_tokenize
    from tokvec.vocab import Vocabulary

    return Vocabulary.from_corpus(word_tokenize(normalize(_corpus())))


@cache
def _byte_bpe(merges: int = 300):
    """A byte-level BPE trained on the corpus: the 256 bytes, then ``merges`` merges."""
    from tokvec import bytebpe

    vocab, learned = bytebpe.train(_corpus(), 256 + merges)
    return bytebpe.Tokenizer(vocab, learned), vocab


# --- the pipeline and its "you are here" copies ----------------------------------------------

#: The steps from a string to the input tensor, as the figures name them. Windows and batches
#: come right after the ids: a data loader batches ids, and only the inputs go through the layer.
STAGES = ("text", "pre-tokens", "tokens", "ids", "windows + targets, batches", "vectors of $W_e$",
          "+ positions", "$(B, T, d)$")
#: The stages each core chapter (and the pipeline chapter after them) works on: its highlight.
CHAPTER_STAGES = {1: (0, 1, 2), 2: (3,), 3: (5,), 4: (3, 5), 5: (6,), 6: (6,), 7: (5, 6), 8: (7,),
                  9: (5, 6, 7), 10: (4,)}
# Which chapters each stage is taught in, printed under the small copies.
_TAUGHT = ("1", "1", "1", "2", "10", "3–4", "5–7", "8–10")
# The stage names broken into lines: in the small copies' narrow boxes, and in the large figure.
_SHORT = {4: "windows +\ntargets,\nbatches", 5: "vectors\nof $W_e$"}
_LONG = {4: "windows + targets,\nbatches"}
# What turns one stage into the next, and where the course teaches it (the large figure).
_STEPS = ("normalize, cut into pre-tokens (chapter 1)", "BPE: apply the learned merges (chapter 1)",
          "the vocabulary: one id per token (chapter 2)",
          "cut the stream of ids into windows of T, targets shifted by one; stack B windows (chapter 10)"
          " or B padded sentences (chapter 8)",
          "the inputs only: $W_e[:, x[t]]$ (row $x[t]$ of emb.weight) (chapters 3, 4)",
          "add $W_p[:, t]$ (row $t$ of the positional table PE) (chapters 5 to 7)",
          "all B sequences at once: one tensor, one layer (chapters 8 to 10)")


@cache
def _bpe_window(T: int):
    """The first window of the corpus's first document under chapter 1's BPE: ``T`` inputs and
    ``T`` targets; the running sentence opens the corpus, so the inputs are its ids."""
    from tokvec.text import BPE
    from tokvec.vocab import Vocabulary

    bpe = BPE.train(_corpus(), vocab_size=400)
    stream = Vocabulary(bpe.vocab).encode(bpe.tokenize(_corpus().splitlines()[0]))
    return stream[:T], stream[1:T + 1]


def pipeline() -> Figure:
    """The whole pipeline on the running sentence, one stage a row: the intro's figure."""
    text, pretokens, tokens, ids = _bpe_example()
    T, d = len(tokens), 4
    inputs, targets = _bpe_window(T)
    assert inputs == ids and targets[:-1] == ids[1:]
    width, left, cw = 10.0, 2.45, 0.68
    sub, split = 0.3, 0.16                                   # the windows row: inputs over targets
    heights = [0.42] * len(STAGES)
    heights[4] = 2 * sub + split
    gap = 0.52
    height = 0.35 + sum(heights) + (len(STAGES) - 1) * gap + 0.3
    fig, ax = _canvas(width, height)
    ys, top = [], height - 0.3
    for h in heights:                                        # the bottom of each row
        ys.append(top - h)
        top -= h + gap
    row_h = heights[0]
    cols = [left + j * (cw + 0.06) for j in range(T)]
    right = cols[-1] + cw
    for k, (stage, y, h) in enumerate(zip(STAGES, ys, heights)):
        _box(ax, 0.2, y, 1.85, h, _LONG.get(k, stage), fill=WHITE, lw=1.3, weight="bold", size=10.5)
        if k < len(STAGES) - 1:
            _arrow(ax, (1.12, y), (1.12, y - gap), lw=1.4)
            _text(ax, 1.3, y - gap / 2, _STEPS[k], ha="left", size=9, color=MUTED, style="italic")
    note = dict(ha="left", size=8.5, color=MUTED)
    # text
    _box(ax, cols[0], ys[0], right - cols[0], row_h, f'"{text}"', fill=TOKEN, mono=True, size=11)
    # pre-tokens: the first one spans the two tokens BPE cuts it into
    j = 0
    for piece in pretokens:
        n = 1
        while "".join(tokens[j:j + n]) != piece:
            n += 1
        _box(ax, cols[j], ys[1], cols[j + n - 1] + cw - cols[j], row_h, piece, fill=TOKEN, mono=True, size=10)
        j += n
    # windows: this sentence is window 0 of the corpus; B windows, inputs and targets, stacked
    yi, yt = ys[4] + sub + split, ys[4]
    for y, fill, hatch in ((yi, ID, None), (yt, WHITE, "////")):
        _slab_stack(ax, cols[0], y, right - cols[0], sub, 3, 0.1, 0.05, fill=fill, hatch=hatch,
                    front=dict(fill=WHITE, hatch=None))
    for j in range(T):
        _box(ax, cols[j], ys[2], cw, row_h, tokens[j], fill=TOKEN, mono=True, size=10)
        _box(ax, cols[j], ys[3], cw, row_h, ids[j], fill=ID, mono=True, size=10)
        _box(ax, cols[j], yi, cw, sub, inputs[j], fill=ID, mono=True, size=9, zorder=20)
        _box(ax, cols[j], yt, cw, sub, targets[j], fill=WHITE, hatch="////", mono=True, size=9, zorder=20)
        _vector_strip(ax, cols[j], ys[5] + 0.06, cw, row_h - 0.12, d, fill=VECTOR)
        _vector_strip(ax, cols[j], ys[6] + 0.06, cw, row_h - 0.12, d, fill=POSITION, hatch="////")
        _text(ax, cols[j] + cw / 2, ys[6] + row_h - 0.04, f"t = {j}", size=7.5, color=MUTED, va="bottom")
    _text(ax, right + 0.12, ys[3] + row_h / 2, f"T = {T}", **note)
    _text(ax, right + 0.35, yi + sub / 2, "inputs: B windows\nof T ids, (B, T)", **note)
    _text(ax, right + 0.35, yt + sub / 2, "targets: shifted\nby one, (B, T), ids", **note)
    _text(ax, right + 0.12, ys[5] + row_h / 2, "one vector of\nd numbers each", **note)
    _text(ax, right + 0.12, ys[6] + row_h / 2, "$W_p[:, t]$,\nadded", **note)
    # the batch: this sequence's T sums in front, more sequences behind
    _slab_stack(ax, cols[0], ys[7], right - cols[0], row_h - 0.1, 3, 0.1, 0.05, fill=SUM, front=dict(fill=WHITE))
    for j in range(T):
        _vector_strip(ax, cols[j], ys[7], cw, row_h - 0.1, d, fill=SUM, lw=0.6, zorder=20)
    _text(ax, right + 0.35, ys[7] + 0.2, "B sequences,\nT vectors each", **note)
    return fig


def pipeline_here(chapter: int) -> Figure:
    """The pipeline in one line, with the stages of ``chapter`` highlighted: "you are here"."""
    here = set(CHAPTER_STAGES[chapter])
    width, height = 10.0, 1.45
    fig, ax = _canvas(width, height)
    n = len(STAGES)
    gap, bh, y = 0.2, 0.62, 0.36
    bw = (width - 0.2 - (n - 1) * gap) / n
    xs = [0.1 + k * (bw + gap) for k in range(n)]
    for k, (stage, x) in enumerate(zip(STAGES, xs)):
        label = _SHORT.get(k, stage)
        size = 9.5 if "\n" in label else 10
        if k in here:
            _box(ax, x, y, bw, bh, label, fill=HERE, hatch="//", lw=2.4, weight="bold", size=size)
            _text(ax, x + bw / 2, y + bh + 0.14, "\u25bc", size=9.5)
        else:
            _box(ax, x, y, bw, bh, label, fill=WHITE, edge=FAINT, lw=1.0, size=size, color=MUTED)
        _text(ax, x + bw / 2, y - 0.16, f"ch. {_TAUGHT[k]}", size=8.5, color=MUTED)
        if k < n - 1:
            _arrow(ax, (x + bw + 0.03, y + bh / 2), (x + bw + gap - 0.03, y + bh / 2), lw=1.1,
                   color=INK if {k, k + 1} <= here else FAINT)
    first = last = min(here)                  # the label goes over the first run of highlighted stages
    while last + 1 in here:
        last += 1
    _text(ax, (xs[first] + xs[last] + bw) / 2, y + bh + 0.38, "you are here", size=10, weight="bold")
    return fig


# --- chapter 1: a BPE merge step, and bytes --------------------------------------------------

def bpe_merge() -> Figure:
    """One training step of BPE on chapter 1's toy corpus: count the pairs, merge the winner."""
    from tokvec.text import BPE, count_pairs, merge_pair, pretokenize

    toy = "walk walked walking talk talked"
    word_freq = Counter(pretokenize(toy))
    splits = {word: list(word) for word in word_freq}
    pairs = count_pairs(splits, word_freq)
    best = BPE.train(toy, vocab_size=20).merges[0]        # the tie rule of the package
    merged = {word: merge_pair(symbols, best) for word, symbols in splits.items()}
    width, height = 10.6, 3.55
    fig, ax = _canvas(width, height)
    sw, sh = 0.3, 0.32
    top = height - 0.95
    ys = [top - k * 0.52 for k in range(len(splits))]
    strong = dict(fill=HERE, hatch="//", lw=2.0, mono=True, weight="bold")

    def words(x0, table, title, new=None):
        _text(ax, x0, height - 0.3, title, ha="left", weight="bold", size=10.5)
        for y, symbols in zip(ys, table.values()):
            x, k = x0, 0
            while k < len(symbols):
                if new is None and tuple(symbols[k:k + 2]) == best:       # the pair about to merge
                    for a in best:
                        _box(ax, x, y, sw, sh, a, **strong)
                        x += sw
                    k += 2
                    continue
                s = symbols[k]
                w = sw * len(s)
                _box(ax, x, y, w, sh, s, **(strong if s == new else dict(fill=TOKEN, mono=True)))
                x += w
                k += 1

    words(0.25, splits, "(a) each word as characters")
    _text(ax, 0.25, 0.2, "each pre-token occurs once here", ha="left", size=8.5, color=MUTED)
    bx = 3.4
    _text(ax, bx, height - 0.3, "(b) count adjacent pairs", ha="left", weight="bold", size=10.5)
    shown = pairs.most_common(4)
    for k, (pair, count) in enumerate(shown):
        y = top + 0.02 - k * 0.44
        style = strong if pair == best else dict(fill=WHITE, lw=0.9, mono=True)
        _box(ax, bx, y, 1.3, 0.34, f"({pair[0]}, {pair[1]})", **style)
        _box(ax, bx + 1.3, y, 0.5, 0.34, count, **style)
    rest = [c for p, c in pairs.items() if (p, c) not in shown]
    _text(ax, bx, top + 0.02 - len(shown) * 0.44 + 0.2, f"and {len(rest)} more pairs, none more than {max(rest)}",
          ha="left", size=8.5, color=MUTED)
    _text(ax, bx, 0.45, f"a tie at {pairs[best]}: ({best[0]}, {best[1]}) wins,\nits symbols entered the "
          "vocabulary first", ha="left", size=8.5, color=MUTED)
    cx = 6.75
    _arrow(ax, (bx + 1.9, top + 0.19), (cx - 0.2, top + 0.19), lw=1.6)
    _text(ax, (bx + 1.9 + cx - 0.2) / 2, top + 0.36, f"merge ({best[0]}, {best[1]})", size=9, style="italic",
          va="bottom")
    new = best[0] + best[1]
    words(cx, merged, f"(c) new token \u201c{new}\u201d, everywhere", new=new)
    _text(ax, cx, 0.2, "remember the merge, count again, repeat", ha="left", size=8.5, color=MUTED)
    return fig


def merge_chain() -> Figure:
    """Chapter 1's toy BPE tokenizing "walked talking": the learned merges, then, for each word, the
    chain of merges that builds its tokens from characters, one merge a step, earliest learned first."""
    from tokvec.text import BPE, pretokenize

    toy = "walk walked walking talk talked"
    toy_bpe = BPE.train(toy, vocab_size=20)
    merges = toy_bpe.merges
    rank = {pair: r for r, pair in enumerate(merges)}
    text = "walked talking"
    words = pretokenize(text)
    chains = []                         # per word: [(symbols, the merge that made them, its index)]
    for word in words:                  # as BPE.tokenize_word_simple: lowest rank first, leftmost on a tie
        symbols, chain = list(word), [(list(word), None, None)]
        while True:
            ranks = [rank.get(pair, math.inf) for pair in zip(symbols, symbols[1:])]
            if not ranks or min(ranks) == math.inf:
                break
            i = ranks.index(min(ranks))
            pair = (symbols[i], symbols[i + 1])
            symbols = symbols[:i] + [pair[0] + pair[1]] + symbols[i + 2:]
            chain.append((symbols, rank[pair], i))
        chains.append(chain)
    assert [s for chain in chains for s in chain[-1][0]] == toy_bpe.tokenize(text)
    used = {r for chain in chains for _, r, _ in chain if r is not None}
    width, height = 11.2, 4.75
    fig, ax = _canvas(width, height)
    strong = dict(fill=HERE, hatch="//", lw=2.0, mono=True, weight="bold", size=10)
    # (a) the merges in the order training learned them
    _text(ax, 0.2, height - 0.3, "(a) the merges, in the order\nthey were learned", ha="left", va="top",
          weight="bold", size=10.5)
    top = height - 0.95
    for r, (a, b) in enumerate(merges):
        y = top - (r + 1) * 0.36
        on = r in used
        _box(ax, 0.25, y, 0.4, 0.3, r + 1, fill=WHITE, edge=INK if on else FAINT, mono=True, size=9,
             color=INK if on else MUTED)
        _box(ax, 0.7, y, 1.55, 0.3, f"({a}, {b})", fill=TOKEN if on else WHITE, edge=INK if on else FAINT,
             mono=True, size=9.5, color=INK if on else MUTED)
    _text(ax, 0.25, top - len(merges) * 0.36 - 0.15, f"BPE.train(toy, vocab_size=20)\non the toy corpus: "
          f"{len(merges)} merges;\ngrey: used by neither word", ha="left", va="top", size=8.5, color=MUTED)
    # (b) each word of the text, merged step by step
    sw, sh, step = 0.28, 0.34, 0.58
    x0s = [2.85, 7.0]
    _text(ax, x0s[0] - 0.2, height - 0.3, f"(b) tokenize(\"{text}\"): in each pre-token, the earliest "
          "learned merge\nthat fits goes first, until none fits", ha="left", va="top", weight="bold", size=10.5)
    for x0, word, chain in zip(x0s, words, chains):
        y = top - 0.25
        _text(ax, x0, top + 0.02, f"pre-token \"{word}\"", ha="left", size=9.5, mono=True, color=MUTED)
        for k, (symbols, r, at) in enumerate(chain):
            x = x0
            for j, s in enumerate(symbols):
                w = sw * len(s)
                new = r is not None and j == at
                _box(ax, x, y - sh, w, sh, s, **(strong if new else dict(fill=TOKEN, mono=True, size=10)))
                x += w
            label = "characters" if r is None else f"merge {r + 1}: ({merges[r][0]}, {merges[r][1]})"
            _text(ax, x0 + sw * len(word) + 0.2, y - sh / 2, label, ha="left", size=8.5,
                  color=MUTED if r is None else INK, mono=r is not None)
            if k < len(chain) - 1:
                _arrow(ax, (x0 - 0.12, y - sh - 0.02), (x0 - 0.12, y - step + 0.02), lw=1.0, scale=8)
            y -= step
        tokens = chain[-1][0]
        _text(ax, x0, y - 0.05, f"tokens: {tokens}", ha="left", va="top", size=9.5, mono=True, weight="bold")
    applied = [", ".join(str(r + 1) for _, r, _ in chain if r is not None) for chain in chains]
    _text(ax, x0s[0] - 0.2, 0.2, f"\"{words[0]}\" uses merges {applied[0]}; \"{words[1]}\" uses merges "
          f"{applied[1]}: it never occurred in the corpus, yet is spelled from known pieces.", ha="left", size=8.5,
          color=MUTED)
    return fig


def utf8_bytes() -> Figure:
    """A character's UTF-8 bytes, and the bytes byte-level BPE starts from (chapter 1, "Bytes, in brief")."""
    chars = ["a", "é", "東", "\U0001F600"]
    # DejaVu Sans has no glyph for 東 and no font with one ships offline: its code point stands in
    # the box, and the chapter's alt text names the character
    names = {"東": "U+6771"}
    width, height = 9.4, 4.45
    fig, ax = _canvas(width, height)
    _text(ax, 0.25, height - 0.3, "(a) one character, one to four bytes", ha="left", weight="bold", size=10.5)
    bw, bh = 0.72, 0.4
    for k, ch in enumerate(chars):
        y = height - 1.0 - k * 0.55
        data = ch.encode("utf-8")
        _box(ax, 0.3, y, 0.6 if ch not in names else 0.8, bh, names.get(ch, ch), fill=TOKEN,
             size=13 if ch not in names else 8.5, mono=ch in names)
        _text(ax, 1.0 if ch not in names else 1.2, y + bh / 2,
              f"U+{ord(ch):04X}" if ch not in names else "a CJK\ncharacter", ha="left", size=9,
              mono=ch not in names, color=MUTED)
        _arrow(ax, (2.0, y + bh / 2), (2.55, y + bh / 2))
        for b, byte in enumerate(data):
            _box(ax, 2.65 + b * (bw + 0.05), y, bw, bh, f"{byte}", fill=ID, mono=True, size=10)
            _text(ax, 2.65 + b * (bw + 0.05) + bw / 2, y - 0.02, f"0x{byte:02X}", size=7, mono=True, color=MUTED,
                  va="top")
        _text(ax, 2.65 + 4 * (bw + 0.05) + 0.1, y + bh / 2, f"{len(data)} byte{'s' if len(data) > 1 else ''}",
              ha="left", size=9, color=MUTED)
    _text(ax, 6.55, height - 1.3, "a byte has 256 values:\nany text is spelled\nfrom the same\n"
          "256 base symbols,\nso nothing is unknown", ha="left", va="top", size=9)
    # (b) byte-level BPE on "café"
    tok, vocab = _byte_bpe()
    word = "café"
    start = list(word.encode("utf-8"))
    ids = tok.encode(word)
    merges = len(vocab) - 256
    yb = 0.55
    _text(ax, 0.25, yb + 0.85, f"(b) byte-level BPE starts from the bytes; {merges} merges learned on the corpus "
          "join some of them", ha="left", weight="bold", size=10.5)

    def label(b: bytes) -> str:
        text = b.decode("utf-8", errors="replace")
        return text if "\ufffd" not in text else f"0x{b[0]:02X}"

    _text(ax, 0.3, yb + 0.2, f'"{word}"', ha="left", mono=True, size=11)
    x = 1.3
    for byte in start:
        _box(ax, x, yb, 0.5, bh, label(bytes([byte])), fill=ID, mono=True, size=9)
        _text(ax, x + 0.25, yb - 0.03, byte, size=7, mono=True, color=MUTED, va="top")
        x += 0.55
    _arrow(ax, (x + 0.1, yb + bh / 2), (x + 0.65, yb + bh / 2))
    x += 0.8
    for i in ids:
        piece = vocab[i]
        w = 0.5 + 0.12 * max(0, len(piece) - 1)
        inside = len(piece) == 1 and piece[0] >= 0x80          # a byte that is part of a character
        _box(ax, x, yb, w, bh, label(piece), fill=HERE if inside else VECTOR, hatch="//" if inside else None,
             lw=2.0 if inside else 1.0, mono=True, size=9)
        _text(ax, x + w / 2, yb - 0.03, i, size=7, mono=True, color=MUTED, va="top")
        x += w + 0.05
    seen = _corpus().count("é")
    _text(ax, x + 0.1, yb + bh / 2, f"é occurs {seen} times in the\ncorpus: no merge joins its\nbytes, each token is "
          "half\na character", ha="left", size=8.5, color=MUTED)
    return fig


# --- chapter 2: the vocabulary ---------------------------------------------------------------

def vocabulary() -> Figure:
    """Chapter 2's vocabulary: specials at fixed ids, <unk> for a word it lacks, a padded batch and its mask."""
    from tokvec.text import SENTENCE, word_tokenize
    from tokvec.vocab import SPECIALS

    vocab = _word_vocab()
    pad = vocab.token_to_id("<pad>")
    width, height = 10.2, 4.6
    fig, ax = _canvas(width, height)
    # (a) the table
    _text(ax, 0.2, height - 0.3, "(a) the vocabulary", ha="left", weight="bold", size=10.5)
    words = [vocab.token_to_id(t) for t in ("The", "cat", "sat", "mat")]
    shown = [*range(8), None, *words, None, len(vocab) - 1]
    rh, y = 0.225, height - 0.62
    for v in shown:
        y -= rh
        if v is None:
            _text(ax, 0.95, y + rh / 2, "\u22ee", size=10)
            continue
        special = v < len(SPECIALS)
        _box(ax, 0.3, y, 0.55, rh, v, fill=ID, mono=True, size=8.5, lw=0.8)
        _box(ax, 0.85, y, 1.05, rh, vocab.id_to_token(v), fill=WHITE if special else TOKEN, mono=True, size=8.5,
             lw=1.6 if special else 0.8, hatch="\\\\\\" if special else None, weight="bold" if special else "normal")
    top_special = height - 0.62 - len(SPECIALS) * rh
    _text(ax, 2.0, top_special + len(SPECIALS) * rh / 2, "specials:\nfixed ids", ha="left", size=8.5)
    _text(ax, 2.0, y + rh / 2, f"N_V = {len(vocab)}", ha="left", size=8.5, color=MUTED, mono=True)
    _text(ax, 2.0, height - 0.62 - 8 * rh - 0.1, "then the corpus's\ntokens, most\nfrequent first",
          ha="left", va="top", size=8.5, color=MUTED)
    # (b) an unknown word
    x0 = 3.65
    _text(ax, x0, height - 0.3, "(b) a word it lacks becomes <unk>", ha="left", weight="bold", size=10.5)
    tokens = word_tokenize("The zebra sat on the mat.")
    ids = vocab.encode(tokens)
    cw = 0.74
    for j, (t, v) in enumerate(zip(tokens, ids)):
        unk = v == vocab.unk_id
        x = x0 + j * (cw + 0.05)
        _box(ax, x, height - 0.95, cw, 0.32, t, fill=TOKEN, mono=True, size=9)
        _arrow(ax, (x + cw / 2, height - 0.97), (x + cw / 2, height - 1.2), lw=0.9, scale=8)
        _box(ax, x, height - 1.52, cw, 0.32, v, fill=HERE if unk else ID, hatch="//" if unk else None,
             lw=2.0 if unk else 1.0, mono=True, size=9, weight="bold" if unk else "normal")
    _text(ax, x0, height - 1.78, f"zebra \u2192 {vocab.unk_id} = <unk>: decoding cannot bring it back", ha="left",
          size=8.5, color=MUTED)
    # (c) a padded batch and its mask, built as chapter 2 builds them
    sentences = ["The cat sat.", SENTENCE]
    rows = [vocab.encode(word_tokenize(s), add_bos_eos=True) for s in sentences]
    T = max(len(r) for r in rows)
    batch = [r + [pad] * (T - len(r)) for r in rows]
    mask = [[v != pad for v in r] for r in batch]
    _text(ax, x0, 2.38, f"(c) a padded batch, (B, T) = ({len(batch)}, {T}), and its mask", ha="left",
          weight="bold", size=10.5)
    cw, rh = 0.6, 0.27
    for b, (row, m) in enumerate(zip(batch, mask)):
        for t, (v, real) in enumerate(zip(row, m)):
            x = x0 + 0.75 + t * cw
            style = dict(mono=True, size=8.5, lw=0.8, hatch=None if real else "\\\\\\")
            _box(ax, x, 1.85 - b * rh, cw, rh, v, fill=ID if real else WHITE, weight="normal" if real else "bold",
                 **style)
            _box(ax, x, 0.95 - b * rh, cw, rh, int(real), fill=SUM if real else WHITE, **style)
    _text(ax, x0 + 0.7, 1.85, "batch", ha="right", size=9)
    _text(ax, x0 + 0.7, 0.95, "mask", ha="right", size=9)
    _text(ax, x0 + 0.75, 0.3, "pad with <pad> (id 0) at the end; mask = batch != <pad>:\n1 (True) at a real token, "
          "0 at padding", ha="left", size=8.5, color=MUTED)
    return fig


def gradient_rows() -> Figure:
    """Chapter 2's padded batch through nn.Embedding(848, 4), summed and backpropagated: the rows of the
    ids in the batch get a gradient (one unit per occurrence), every other row exactly zero."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    from tokvec.text import SENTENCE, word_tokenize

    vocab = _word_vocab()
    pad = vocab.token_to_id("<pad>")
    rows = [vocab.encode(word_tokenize(s), add_bos_eos=True) for s in ("The cat sat.", SENTENCE)]
    batch = pad_sequence([torch.tensor(r) for r in rows], batch_first=True, padding_value=pad)   # (2, 9)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        table = torch.nn.Embedding(len(vocab), 4)        # weight: (N_V, d) = (848, 4)
    table(batch).sum().backward()
    grad = table.weight.grad
    hit = grad.abs().sum(dim=1).nonzero().flatten().tolist()
    assert hit == sorted(set(batch.flatten().tolist()))
    N_V, d = grad.shape
    counts = Counter(batch.flatten().tolist())
    assert all(grad[v].tolist() == [float(counts[v])] * d for v in hit)
    # the column: every row with a gradient, and each run of rows without one as one short block
    segments, prev = [], -1
    for v in [*hit, N_V]:
        if v - prev > 1:
            segments.append((prev + 1, v - 1))
        if v < N_V:
            segments.append((v, v))
        prev = v
    width, height = 10.4, 4.95
    fig, ax = _canvas(width, height)
    # (a) the batch
    _text(ax, 0.2, height - 0.3, f"(a) the padded batch, (B, T) = {tuple(batch.shape)}", ha="left",
          weight="bold", size=10.5)
    cw, rh = 0.42, 0.27
    B, T = batch.shape
    for b in range(B):
        for t in range(T):
            v = int(batch[b, t])
            _box(ax, 0.3 + t * cw, height - 0.75 - (b + 1) * rh, cw, rh, v, fill=WHITE if v == pad else ID,
                 hatch="\\\\\\" if v == pad else None, mono=True, size=8.5, lw=0.8)
    ids = ", ".join(str(v) for v in hit)
    lines = ((f"table = nn.Embedding({N_V}, {d})\ntable(batch).sum().backward():\n{B} x {T} = {B * T} lookups "
              f"of {len(hit)} distinct ids", dict(color=MUTED)),
             (f"rows with a gradient:\n[{ids}]", dict(mono=True)),
             (f"Each entry of a row's gradient is how\noften its id occurs in the batch: 'The'\n"
              f"({vocab.token_to_id('The')}) twice, 'the' ({vocab.token_to_id('the')}) once. The other "
              f"{N_V - len(hit)}\nrows get exactly 0.", dict()),
             ("A dashed block stands for a run of\nrows without a gradient, drawn small.", dict(color=MUTED)))
    y = height - 1.55
    for line, kw in lines:
        _text(ax, 0.3, y, line, ha="left", va="top", size=9, **kw)
        y -= 0.3 + 0.19 * line.count("\n") + 0.25
    # (b) the table's rows, compressed
    x0 = 4.6
    _text(ax, x0 - 0.1, height - 0.3, f"(b) emb.weight.grad: {N_V} rows of d = {d}", ha="left",
          weight="bold", size=10.5)
    _text(ax, x0 + 0.3, height - 0.62, "id", size=8.5, color=MUTED)
    _text(ax, x0 + 1.15, height - 0.62, "token", size=8.5, color=MUTED)
    _text(ax, x0 + 1.7 + d * 0.42 / 2, height - 0.62, "gradient of the row", size=8.5, color=MUTED)
    y = height - 0.78
    rh, gh, gw = 0.235, 0.2, 0.42
    for lo, hi in segments:
        if lo == hi and lo in counts:               # a row of an id in the batch
            y -= rh
            _box(ax, x0, y, 0.6, rh, lo, fill=HERE, hatch="//", lw=1.8, mono=True, size=8.5, weight="bold")
            _box(ax, x0 + 0.6, y, 1.1, rh, vocab.id_to_token(lo), fill=TOKEN, mono=True, size=8.5, lw=1.8)
            for k in range(d):
                _box(ax, x0 + 1.7 + k * gw, y, gw, rh, f"{grad[lo, k].item():.0f}", fill=HERE, hatch="//", lw=1.8,
                     mono=True, size=8.5, weight="bold")
            _text(ax, x0 + 1.8 + d * gw, y + rh / 2, f"\u00d7{counts[lo]} in the batch", ha="left", size=8.5)
        elif lo == hi:                              # one row that is not in the batch
            y -= rh
            _box(ax, x0, y, 0.6, rh, lo, fill=WHITE, edge=FAINT, mono=True, size=8, color=MUTED, lw=0.8)
            _box(ax, x0 + 0.6, y, 1.1, rh, vocab.id_to_token(lo), fill=WHITE, edge=FAINT, mono=True, size=8,
                 color=MUTED, lw=0.8)
            _box(ax, x0 + 1.7, y, d * gw, rh, "no gradient", fill=WHITE, edge=FAINT, size=8, color=MUTED, lw=0.8)
        else:                                       # a run of rows, drawn as one short block
            y -= gh
            _box(ax, x0, y, 1.7 + d * gw, gh, "", fill=WHITE, edge=FAINT, lw=0.8, ls="--")
            _text(ax, x0 + 0.85, y + gh / 2, f"{lo}\u2013{hi}", mono=True, size=8, color=MUTED)
            _box(ax, x0 + 1.7, y, d * gw, gh, f"no gradient ({hi - lo + 1} rows)", fill=WHITE, edge=FAINT,
                 size=8, color=MUTED, lw=0.8, ls="--")
    return fig


# --- chapter 3: the table, its layouts, the lookup -------------------------------------------

@cache
def _small_table():
    from tokvec.reference import random_matrix

    return random_matrix(4, 6, seed=0)          # chapter 3's W_e: d_e x N_V = 4 x 6


def _matrix(ax, x, y_top, M, *, cw=0.62, rh=0.27, col=None, row=None, col_labels=None, row_labels=None,
            size=8, fill=VECTOR):
    """Draw matrix ``M`` (a list of rows) with its top left at (x, y_top); column ``col`` or row ``row``
    highlighted and outlined."""
    for i, values in enumerate(M):
        for j, value in enumerate(values):
            hit = j == col or i == row
            _box(ax, x + j * cw, y_top - (i + 1) * rh, cw, rh, f"{value:.2f}", fill=HERE if hit else fill,
                 hatch="//" if hit else None, lw=0.8, mono=True, size=size, weight="bold" if hit else "normal")
    if col is not None:
        ax.add_patch(Rectangle((x + col * cw, y_top - len(M) * rh), cw, len(M) * rh, fill=False, edgecolor=INK,
                               linewidth=2.4, zorder=6))
    if row is not None:
        ax.add_patch(Rectangle((x, y_top - (row + 1) * rh), len(M[0]) * cw, rh, fill=False, edgecolor=INK,
                               linewidth=2.4, zorder=6))
    for j, lab in enumerate(col_labels or []):
        _text(ax, x + j * cw + cw / 2, y_top + 0.05, lab, size=7.5, color=MUTED, va="bottom", mono=True)
    for i, lab in enumerate(row_labels or []):
        _text(ax, x - 0.06, y_top - i * rh - rh / 2, lab, size=7.5, color=MUTED, ha="right", mono=True)


def lookup() -> Figure:
    """A lookup selects column v of W_e; the one-hot vector of v times W_e gives the same column."""
    from tokvec.reference import column, matvec, one_hot

    W_e = _small_table()
    d_e, N_V, v = len(W_e), len(W_e[0]), 2
    e = column(W_e, v)
    o = one_hot(v, N_V)
    assert matvec(W_e, o) == e
    width, height = 8.6, 5.0
    fig, ax = _canvas(width, height)
    cw, rh = 0.62, 0.27
    cols = [f"v={j}" for j in range(N_V)]
    rows = [f"{i}" for i in range(d_e)]
    mx = 0.7
    # (a) selection
    top = height - 0.8
    _text(ax, 0.25, height - 0.3, f"(a) the lookup reads column {v}: it copies $d_e$ = {d_e} numbers",
          ha="left", weight="bold", size=10.5)
    _matrix(ax, mx, top, W_e, col=v, col_labels=cols, row_labels=rows)
    _text(ax, mx + N_V * cw / 2, top - d_e * rh - 0.2, f"$W_e$: $d_e \\times N_V$ = {d_e} x {N_V}", size=9)
    _arrow(ax, (mx + N_V * cw + 0.15, top - d_e * rh / 2), (mx + N_V * cw + 0.95, top - d_e * rh / 2), lw=1.5)
    _column(ax, mx + N_V * cw + 1.1, top, cw, rh, e, fill=HERE, hatch="//", weight="bold")
    _text(ax, mx + N_V * cw + 1.1 + cw + 0.12, top - d_e * rh / 2, f"$W_e[:, {v}]$", ha="left", size=10)
    # (b) the one-hot product
    top2 = 1.7
    orh = rh
    o_top = top2 - d_e * rh / 2 + N_V * orh / 2           # o is centred on the matrix
    _text(ax, 0.25, o_top + 0.5, f"(b) the same column as a product $W_e\\,o$, $o$ one-hot at {v}: "
          f"{d_e * N_V} multiply-adds", ha="left", weight="bold", size=10.5)
    _matrix(ax, mx, top2, W_e, col=v, col_labels=cols, row_labels=rows)
    ox = mx + N_V * cw + 0.35
    _text(ax, ox - 0.17, top2 - d_e * rh / 2, "\u00d7", size=14)
    for j, value in enumerate(o):
        hit = j == v
        _box(ax, ox, o_top - (j + 1) * orh, 0.45, orh, int(value), fill=HERE if hit else WHITE,
             hatch="//" if hit else None, lw=2.0 if hit else 0.8, mono=True, size=8,
             weight="bold" if hit else "normal")
    _text(ax, ox + 0.225, o_top + 0.04, "$o$", size=9, va="bottom")
    _text(ax, ox + 0.7, top2 - d_e * rh / 2, "=", size=14)
    _column(ax, ox + 0.95, top2, cw, rh, matvec(W_e, o), fill=HERE, hatch="//", weight="bold")
    _text(ax, ox + 0.95 + cw + 0.12, top2 - d_e * rh / 2, "the same numbers:\nevery other column\nis multiplied by 0",
          ha="left", size=8.5, color=MUTED)
    return fig


def layouts() -> Figure:
    """The paper's W_e (d_e x N_V, token v = column v) and its transpose, the same numbers in PyTorch's
    layout (N_V x d_e, token v = row v); not chapter 3's seeded nn.Embedding, whose numbers differ."""
    from tokvec.reference import column, transpose

    W_e = _small_table()
    rows_layout = transpose(W_e)
    d_e, N_V, v = len(W_e), len(W_e[0]), 2
    assert rows_layout[v] == column(W_e, v)
    width, height = 9.6, 3.65
    fig, ax = _canvas(width, height)
    cw, rh = 0.62, 0.27
    top = height - 1.2
    _text(ax, 0.25, height - 0.3, "(a) the paper: $W_e \\in \\mathbb{R}^{d_e \\times N_V}$", ha="left",
          weight="bold", size=10.5)
    _text(ax, 0.25, height - 0.57, f"{d_e} x {N_V}: token v is column v", ha="left", va="top", size=9,
          color=MUTED)
    _matrix(ax, 0.6, top, W_e, col=v, col_labels=[f"v={j}" for j in range(N_V)],
            row_labels=[str(i) for i in range(d_e)])
    x2 = 6.0
    _arrow(ax, (0.6 + N_V * cw + 0.2, top - d_e * rh / 2), (x2 - 0.55, top - d_e * rh / 2), lw=1.5)
    _text(ax, (0.6 + N_V * cw + x2 - 0.35) / 2, top - d_e * rh / 2 + 0.17, "transpose", size=9, style="italic")
    _text(ax, x2 - 0.45, height - 0.3, "(b) the same numbers in PyTorch's layout", ha="left", weight="bold",
          size=10.5)
    _text(ax, x2 - 0.45, height - 0.57, f"{N_V} x {d_e}, the shape of nn.Embedding's weight:\ntoken v is row v",
          ha="left", va="top", size=9, color=MUTED)
    _matrix(ax, x2, top, rows_layout, row=v, col_labels=[str(i) for i in range(d_e)],
            row_labels=[f"v={j}" for j in range(N_V)])
    _text(ax, 0.25, 0.32, f"The same {d_e * N_V} numbers: column {v} of $W_e$ is row {v} of the transpose. Stored "
          f"row by row, as both are,\nonly the {N_V} x {d_e} layout keeps a token's {d_e} numbers in one "
          "contiguous block; a column is spread over every row.", ha="left", size=9, color=MUTED)
    return fig


# --- chapter 5: the positional table added ---------------------------------------------------

def positions() -> Figure:
    """Chapter 5's sentence: each token's vector plus the column of W_p at its position gives e_t."""
    from tokvec.reference import column, embed, random_matrix, sinusoidal_positions
    from tokvec.text import SENTENCE, word_tokenize

    vocab = _word_vocab()
    tokens = word_tokenize(SENTENCE)
    x = vocab.encode(tokens)
    d_e, l_max = 4, 16
    W_e = random_matrix(d_e, len(vocab), seed=0)
    W_p = sinusoidal_positions(d_e, l_max)
    e = embed(x, W_e, W_p)
    T = len(x)
    width, height = 9.6, 4.75
    fig, ax = _canvas(width, height)
    left, cw, rh, gap = 1.55, 0.66, 0.22, 0.06
    cols = [left + t * (cw + gap) for t in range(T)]
    ytok = height - 0.3
    for t in range(T):
        _text(ax, cols[t] + cw / 2, ytok, tokens[t], mono=True, size=10, weight="bold")
        _text(ax, cols[t] + cw / 2, ytok - 0.22, f"x[{t}]={x[t]}", mono=True, size=7.5, color=MUTED)
    blocks = [("$W_e[:, x[t]]$\nthe token", [column(W_e, v) for v in x], VECTOR, None),
              ("$W_p[:, t]$\nthe position", [column(W_p, t) for t in range(T)], POSITION, "////"),
              ("$e_t$, the sum", e, SUM, None)]
    top = ytok - 0.42
    for k, (name, vectors, fill, hatch) in enumerate(blocks):
        _text(ax, 0.2, top - d_e * rh / 2, name, ha="left", size=9.5)
        for t in range(T):
            _column(ax, cols[t], top, cw, rh, vectors[t], fill=fill, hatch=hatch)
        if k == 1:    # positions of the table this sentence does not reach
            for t in range(T):
                _text(ax, cols[t] + cw / 2, top + 0.03, f"t={t}", size=7.5, color=MUTED, va="bottom", mono=True)
            xr = cols[-1] + cw + 0.3
            for t in range(T, l_max):
                for i in range(d_e):
                    _box(ax, xr + (t - T) * 0.2, top - (i + 1) * rh, 0.2, rh, fill=WHITE, hatch="////", edge=FAINT,
                         lw=0.6)
            _text(ax, xr + (l_max - T) * 0.1, top + 0.03, f"t = {T}..{l_max - 1}", size=7.5, color=MUTED,
                  va="bottom")
            _text(ax, xr + (l_max - T) * 0.1, top - d_e * rh - 0.06, f"unused: $W_p$ has\n"
                  f"$\\ell_{{\\max}}$ = {l_max} columns", size=7.5, color=MUTED, va="top")
        if k < 2:
            for t in range(T):
                _text(ax, cols[t] + cw / 2, top - d_e * rh - 0.2, "+="[k], size=13, weight="bold")
        top -= d_e * rh + 0.45
    _text(ax, 0.2, 0.22, f"$e_t = W_e[:, x[t]] + W_p[:, t]$ ($d_e$ = {d_e}): a token's vector plus its position's. "
          "Position-aware, not context-aware.", ha="left", size=8.5, color=MUTED)
    return fig


# --- chapter 6: a shift is a rotation --------------------------------------------------------

def rotation() -> Figure:
    """One (sin, cos) pair of W_p as a point on the unit circle, turned by the same angle at every step."""
    from tokvec.reference import frequencies, sinusoidal_positions

    d_e, i, steps, k = 64, 2, 9, 3
    W_p = sinusoidal_positions(d_e, steps)
    omega = frequencies(d_e)[i]
    pts = [(W_p[2 * i][t], W_p[2 * i + 1][t]) for t in range(steps)]
    assert all(abs(s * s + c * c - 1) < 1e-12 for s, c in pts)
    assert abs(math.atan2(pts[1][0], pts[1][1]) - omega) < 1e-12        # one step turns by omega
    width, height = 8.8, 4.6
    fig, ax = _canvas(width, height)
    cx, cy, r = 2.35, 2.2, 1.6

    def at(t, scale=1.0):
        return cx + scale * r * pts[t][0], cy + scale * r * pts[t][1]

    ax.add_patch(Circle((cx, cy), r, fill=False, edgecolor=FAINT, linewidth=1.0, zorder=1))
    _arrow(ax, (cx - r - 0.25, cy), (cx + r + 0.3, cy), color=MUTED, lw=0.9, scale=9)
    _arrow(ax, (cx, cy - r - 0.25), (cx, cy + r + 0.3), color=MUTED, lw=0.9, scale=9)
    _text(ax, cx + r + 0.38, cy + 0.05, f"sine row\n$W_p[{2 * i}, t]$", ha="left", va="bottom", size=8.5)
    _text(ax, cx - 0.1, cy + r + 0.3, f"cosine row $W_p[{2 * i + 1}, t]$", ha="right", va="center", size=8.5)
    for t in range(steps):
        px, py = at(t)
        ax.add_patch(Circle((px, py), 0.07, facecolor=HERE if t in (1, 1 + k) else INK, edgecolor=INK,
                            linewidth=1.0, zorder=6))
        lx, ly = at(t, 1.18)
        if t == 0:
            lx, ly = px + 0.25, py + 0.15
        _text(ax, lx, ly, f"t={t}", size=8.5, mono=True)
    # one step: the angle omega between t = 0 and t = 1, drawn at the centre
    for t in (0, 1, 1 + k):
        ax.add_patch(FancyArrowPatch((cx, cy), at(t), arrowstyle="-", linestyle="--", color=MUTED, linewidth=0.8,
                                     zorder=1))
    _arrow(ax, at(0, 0.3), at(1, 0.3), lw=1.0, rad=-0.3, scale=8)
    _text(ax, cx + 0.45 * r * math.sin(omega / 2), cy + 0.45 * r * math.cos(omega / 2), f"$\\omega_{i}$", size=9)
    # the shift by k from t = 1: one rotation by k * omega
    _arrow(ax, at(1, 0.72), at(1 + k, 0.72), lw=2.2, rad=-0.35, scale=14)
    tx = 5.3
    _text(ax, tx, height - 0.45, f"pair i = {i} of $d_e$ = {d_e}", ha="left", weight="bold", size=10.5)
    _text(ax, tx, height - 0.8, f"$\\omega_{i} = 10000^{{-{2 * i}/{d_e}}}$ = {omega:.4f} rad", ha="left", size=9.5)
    _text(ax, tx, height - 1.55, f"each position step turns the point\nclockwise by $\\omega_{i}$, from (0, 1) "
          "at t = 0", ha="left", size=9.5)
    _text(ax, tx, height - 2.5, f"a shift by k = {k} (bold arrow, t = 1 to {1 + k})\nis a rotation by "
          f"$k\\,\\omega_{i}$: one 2 x 2 matrix,\nthe same at every t", ha="left", size=9.5)
    _text(ax, tx, 0.55, "so the dot product of two positions\ndepends only on their distance", ha="left",
          size=9, color=MUTED)
    return fig


# --- chapter 7: an id where a position belongs -----------------------------------------------

def id_vs_position() -> Figure:
    """W_p[:, t] against the bug W_p[:, x[t]], on chapter 7's two inputs: ids equal to positions, and a
    repeated token."""
    width, height = 9.6, 4.75
    fig, ax = _canvas(width, height)
    inputs = ([0, 1, 2], [2, 0, 2])
    n = 3
    bw, bh, gap = 0.78, 0.36, 0.3
    panels = (("right: $W_p[:, t]$, by position", False), ("the bug: $W_p[:, x[t]]$, by id", True))
    for row, x in enumerate(inputs):
        ytop = height - 0.75 - row * 2.05
        caption = ("x = [0, 1, 2]: every id equals its position, both read p0 p1 p2: the bug hides"
                   if row == 0 else "x = [2, 0, 2]: token 2 repeats; by id, places 0 and 2 share p2, p1 is never read")
        _text(ax, 0.25, ytop + 0.35, caption, ha="left", size=9.5, weight="bold")
        for p, (title, by_id) in enumerate(panels):
            x0 = 0.55 + p * 4.75
            _text(ax, x0, ytop + 0.05, title, ha="left", size=9, color=MUTED)
            read = [x[t] if by_id else t for t in range(n)]
            counts = Counter(read)
            for t in range(n):            # the source: the id x[t] for the bug, the place t where it is right
                _box(ax, x0 + t * (bw + gap), ytop - 0.5, bw, bh, f"x[{t}]={x[t]}" if by_id else f"t = {t}",
                     fill=ID if by_id else WHITE, mono=True, size=8.5)
            for c in range(n):
                twice, never = counts[c] > 1, counts[c] == 0
                if twice:
                    style = dict(fill=HERE, hatch="//", lw=2.2, weight="bold")
                elif never:
                    style = dict(fill=WHITE, edge=FAINT, color=MUTED)
                else:
                    style = dict(fill=POSITION, hatch="////")
                _box(ax, x0 + c * (bw + gap), ytop - 1.45, bw, bh, f"p{c}", mono=True, size=9, **style)
            for t in range(n):
                a = (x0 + t * (bw + gap) + bw / 2, ytop - 0.52)
                b = (x0 + read[t] * (bw + gap) + bw / 2, ytop - 1.45 + bh + 0.02)
                _arrow(ax, a, b, lw=1.3 if by_id and row else 1.0)
            _text(ax, x0 + n * (bw + gap) - 0.15, ytop - 1.45 + bh / 2, "$W_p$", ha="left", size=9)
    _text(ax, 0.25, 0.2, "The test: an input with a repeated token, so that ids and positions differ.",
          ha="left", size=9, color=MUTED)
    return fig


def odd_columns(d: int = 5, l_max: int = 6) -> Figure:
    """Chapter 7's odd dimension: columns 0::2 (sines) and 1::2 (cosines) of an (l_max, d) table with
    d odd, a recipe that computes one cosine per sine, and the fix of tokvec.reference."""
    import numpy as np

    from tokvec.reference import frequencies, sinusoidal_positions

    omega = frequencies(d)                                  # ceil(d / 2) frequencies
    table = np.array(sinusoidal_positions(d, l_max)).T      # (l_max, d), as the chapter's np.zeros((6, 5))
    n_sin, n_cos = table[:, 0::2].shape[1], table[:, 1::2].shape[1]
    angles = np.outer(np.arange(l_max), omega)              # (l_max, ceil(d / 2))
    try:
        np.zeros((l_max, d))[:, 1::2] = np.cos(angles)      # the recipe: one cosine per sine
        raise AssertionError("an odd d should not fit one cosine per sine")
    except ValueError as error:
        message = str(error)
    fixed = np.zeros((l_max, d))
    fixed[:, 0::2], fixed[:, 1::2] = np.sin(angles), np.cos(angles[:, : d // 2])
    assert np.allclose(fixed, table, atol=1e-12) and len(omega) == n_sin == n_cos + 1
    width, height = 10.6, 4.45
    fig, ax = _canvas(width, height)
    sin_style = dict(fill=POSITION, hatch="////")
    cos_style = dict(fill=WHITE, hatch="\\\\\\")
    lone = dict(fill=HERE, hatch="//", lw=2.2)

    def style(c):
        if c == d - 1:
            return lone
        return sin_style if c % 2 == 0 else cos_style

    # (a) the table
    _text(ax, 0.2, height - 0.3, f"(a) the table, (l_max, d) = ({l_max}, {d}): d is odd", ha="left",
          weight="bold", size=10.5)
    cw, rh, x0, top = 0.72, 0.25, 0.75, height - 1.3
    for c in range(d):
        kind = "sin" if c % 2 == 0 else "cos"
        _box(ax, x0 + c * cw, top, cw, 0.42, "", lw=1.2 if c < d - 1 else 2.2, **{k: v for k, v in style(c).items()
                                                                                   if k != "lw"})
        _text(ax, x0 + c * cw + cw / 2, top + 0.21, f"{kind} \u03c9{c // 2}", size=9, mono=True, bg=WHITE,
              weight="bold" if c == d - 1 else "normal")
        _text(ax, x0 + c * cw + cw / 2, top + 0.47, c, size=8, color=MUTED, va="bottom", mono=True)
        for t in range(l_max):
            _box(ax, x0 + c * cw, top - (t + 1) * rh, cw, rh, f"{table[t, c]:.3f}", mono=True, size=7.5, lw=0.6,
                 fill=WHITE, edge=INK if c < d - 1 else INK)
    ax.add_patch(Rectangle((x0 + (d - 1) * cw, top - l_max * rh), cw, l_max * rh + 0.42, fill=False,
                           edgecolor=INK, linewidth=2.2, zorder=6))
    _text(ax, x0 - 0.08, top + 0.21, "column", ha="right", size=8, color=MUTED)
    for t in range(l_max):
        _text(ax, x0 - 0.08, top - (t + 0.5) * rh, f"t={t}", ha="right", size=7.5, color=MUTED, mono=True)
    yb = top - l_max * rh - 0.3
    sins = ", ".join(str(c) for c in range(0, d, 2))
    coss = ", ".join(str(c) for c in range(1, d, 2))
    _text(ax, x0, yb, f"table[:, 0::2] \u2192 columns {sins}: {n_sin} sines", ha="left", size=9, mono=True)
    _text(ax, x0, yb - 0.27, f"table[:, 1::2] \u2192 columns {coss}: {n_cos} cosines", ha="left", size=9,
          mono=True)
    _text(ax, x0, yb - 0.6, f"column {d - 1}: the sine of pair {d // 2}, with no cosine partner", ha="left",
          size=9, weight="bold")
    _text(ax, x0, yb - 0.95, "values: tokvec.reference.sinusoidal_positions, transposed", ha="left", size=8,
          color=MUTED)
    # (b) the recipe and the fix, drawn as column blocks going into their slots
    bx = 5.35
    _text(ax, bx, height - 0.3, f"(b) {len(omega)} frequencies \u03c9 (ceil(d/2)), but only {n_cos} cosine slots",
          ha="left", weight="bold", size=10.5)
    sw, shh = 0.42, 0.42
    shown = ", ".join(f"{w:.3g}" for w in omega)
    _text(ax, bx, height - 0.62, f"\u03c9 = frequencies({d}) = [{shown}]: \u03c9_i = 10000^(-2i/d)", ha="left",
          size=8.5, mono=True, color=MUTED)

    def blocks(y, n, kind, base_style, note, *, lost=False, title=""):
        _text(ax, bx, y + shh + 0.1, title, ha="left", size=9, mono=True, va="bottom")
        for k in range(n):
            extra = lost and k == n - 1
            st = dict(fill=HERE, hatch="xx", lw=2.2) if extra else base_style
            _box(ax, bx + k * (sw + 0.06), y, sw, shh, f"{kind}\n\u03c9{k}", mono=True, size=7.5, **st)
        slots = n_sin if kind == "sin" else n_cos
        sx = bx + 2.4
        _arrow(ax, (bx + n * (sw + 0.06) + 0.02, y + shh / 2), (sx - 0.1, y + shh / 2), lw=1.2, scale=9)
        for k in range(slots):
            _box(ax, sx + k * (sw + 0.06), y, sw, shh, 2 * k + (kind == "cos"), mono=True, size=8.5,
                 **style(2 * k + (kind == "cos")))
        if n > slots:                                       # where the extra column would have to go
            _box(ax, sx + slots * (sw + 0.06), y, sw, shh, "?", fill=WHITE, edge=FAINT, ls="--", size=9,
                 color=MUTED)
        _text(ax, sx + max(n, slots) * (sw + 0.06) + 0.08, y + shh / 2, note, ha="left", size=8.5,
              weight="bold" if lost else "normal")

    y = height - 1.55
    blocks(y, n_sin, "sin", sin_style, "fits", title="table[:, 0::2] = sin(t * \u03c9)")
    y -= 1.0
    blocks(y, len(omega), "cos", cos_style, "\u2717 no slot", lost=True,
           title="table[:, 1::2] = cos(t * \u03c9)   one cosine per sine")
    _text(ax, bx, y - 0.1, f"ValueError: {message}", ha="left", va="top", size=7.5, mono=True, color=INK)
    y -= 1.25
    blocks(y, n_cos, "cos", cos_style, "fits", title="table[:, 1::2] = cos(t * \u03c9[:d // 2])")
    _text(ax, bx, y - 0.1, "the fix of tokvec.reference: drop the last cosine (or pad\na zero column); training "
          "and inference must share the choice", ha="left", va="top", size=8.5, color=MUTED)
    return fig


# --- chapter 8: shapes ------------------------------------------------------------------------

def shapes() -> Figure:
    """Chapter 8's batch: (B, T) ids gather rows into (B, T, d); the (T, d) table broadcasts over B."""
    from tokvec.text import SENTENCE, word_tokenize

    vocab = _word_vocab()
    pad = vocab.token_to_id("<pad>")
    sentences = [SENTENCE, "The cat sat.", "On the mat, the cat sat on the mat."]
    sequences = [vocab.encode(word_tokenize(s)) for s in sentences]
    T = max(len(s) for s in sequences)
    batch = [s + [pad] * (T - len(s)) for s in sequences]
    B, d, N_V = len(batch), 4, len(vocab)
    width, height = 10.6, 4.6
    fig, ax = _canvas(width, height)
    fw, fh, dx, dy = T * 0.12, d * 0.16, 0.15, 0.12       # a block: T across, d up, B into the page
    # top row: the ids and the gather
    cw, rh = 0.35, 0.27
    x0, ytop = 0.3, height - 0.7
    _text(ax, x0, height - 0.3, f"ids: (B, T) = ({B}, {T})", ha="left", weight="bold", size=11)
    for b, row in enumerate(batch):
        for t, v in enumerate(row):
            real = v != pad
            _box(ax, x0 + t * cw, ytop - (b + 1) * rh, cw, rh, v, fill=ID if real else WHITE, mono=True, size=8.5,
                 lw=0.6, hatch=None if real else "\\\\\\")
    _text(ax, x0, ytop - B * rh - 0.1, f"padded with <pad> = {pad}", ha="left", size=9.5, color=MUTED, va="top")
    ymid = ytop - B * rh / 2
    gx = x0 + T * cw + 0.15
    bx = gx + 1.45
    _arrow(ax, (gx, ymid), (bx - 0.45, ymid), lw=1.5)
    _text(ax, (gx + bx - 0.45) / 2, ymid + 0.22, "weight[ids]", size=10, mono=True)
    _text(ax, (gx + bx - 0.45) / 2, ymid - 0.15, f"a row of weight\n({N_V}, {d}) per id", size=9, color=MUTED,
          va="top")
    by = ymid - fh / 2
    _slab_stack(ax, bx, by, fw, fh, B, dx, dy, fill=VECTOR, dims=("T", "d", "B"))
    _text(ax, bx + fw / 2, by - 0.3, f"({B}, {T}, {d})", size=10, mono=True, va="top")
    # bottom row: the table and its broadcast
    py = 0.95
    _text(ax, x0, py + fh + 0.45, "the positional table, first T rows", ha="left", weight="bold", size=11)
    px = x0 + 1.0
    _box(ax, px, py, fw, fh, fill=POSITION, hatch="////")
    _text(ax, px + fw / 2, py - 0.03, "T", size=11, weight="bold", va="top")
    _text(ax, px - 0.07, py + fh / 2, "d", size=11, weight="bold", ha="right")
    _text(ax, px + fw / 2, py - 0.3, f"table[:T]: ({T}, {d})", size=10, mono=True, va="top")
    _arrow(ax, (px + fw + 0.2, py + fh / 2), (bx - 0.45, py + fh / 2), lw=1.5)
    _text(ax, (px + fw + bx - 0.25) / 2, py + fh / 2 + 0.2, "broadcast", size=10, style="italic")
    _slab_stack(ax, bx, py, fw, fh, B, dx, dy, fill=WHITE, hatch="////", ls="--", edge=MUTED, lw=0.8,
                front=dict(fill=POSITION, ls="-", edge=INK, lw=1.0), dims=("T", "d", "B"))
    _text(ax, bx + fw / 2, py - 0.3, f"read as (1, {T}, {d}): added to\nevery sequence, never copied", size=9,
          color=MUTED, va="top")
    # the sum
    sx, sy = bx + fw + B * dx + 1.05, (by + py) / 2
    _text(ax, sx - 0.55, sy + fh / 2, "+", size=20, weight="bold")
    _arrow(ax, (bx + fw + B * dx + 0.1, by + fh / 2), (sx - 0.3, sy + fh / 2 + 0.15), lw=1.0, color=MUTED, scale=9)
    _arrow(ax, (bx + fw + B * dx + 0.1, py + fh / 2), (sx - 0.3, sy + fh / 2 - 0.15), lw=1.0, color=MUTED, scale=9)
    _slab_stack(ax, sx, sy, fw, fh, B, dx, dy, fill=SUM, dims=("T", "d", "B"))
    _text(ax, sx + fw / 2, sy - 0.3, f"(B, T, d) =\n({B}, {T}, {d})", size=10, mono=True, va="top", weight="bold")
    return fig


# --- chapter 9: the layer ---------------------------------------------------------------------

def layer() -> Figure:
    """The TransformerEmbedding layer of chapter 9 as four blocks, with its running example's sizes."""
    vocab_size, d_model, max_len, p = len(_word_vocab()), 8, 16, 0.1
    width, height = 11.2, 3.2
    fig, ax = _canvas(width, height)
    y, bh, bw, gap = 1.5, 0.95, 1.62, 0.72
    blocks = [("1  look up", f"nn.Embedding\n({vocab_size}, {d_model})", VECTOR),
              ("2  scale", f"\u00d7 \u221ad_model\n= \u00d7 \u221a{d_model}", VECTOR),
              ("3  add positions", "+ PE[:T]", SUM),
              ("4  dropout", f"p = {p};\nthe identity\nin eval()", SUM)]
    _text(ax, 0.15, y + bh / 2 + 0.14, "ids", weight="bold", size=10.5, ha="left")
    _text(ax, 0.15, y + bh / 2 - 0.14, "(B, T)", mono=True, size=10, ha="left")
    x = 1.0
    _arrow(ax, (0.62, y + bh / 2), (x - 0.05, y + bh / 2), lw=1.4)
    for k, (title, body, fill) in enumerate(blocks):
        _box(ax, x, y, bw, bh, "", fill=fill, lw=1.4)
        _text(ax, x + bw / 2, y + bh - 0.17, title, weight="bold", size=10)
        _text(ax, x + bw / 2, y + (bh - 0.32) / 2, body, size=10, mono=True)
        end = x + bw + (gap if k < len(blocks) - 1 else 0.55)
        _arrow(ax, (x + bw + 0.05, y + bh / 2), (end - 0.05, y + bh / 2), lw=1.4)
        if k < len(blocks) - 1:
            _text(ax, x + bw + gap / 2, y + bh / 2 + 0.1, f"(B, T, {d_model})", mono=True, size=8.5, color=MUTED,
                  va="bottom")
        if k == 2:    # the fixed positional table below the add
            _box(ax, x + 0.1, 0.15, bw - 0.2, 0.7, fill=POSITION, hatch="////")
            _text(ax, x + bw / 2, 0.5, f"sinusoidal\ntable ({max_len}, {d_model})", size=9.5, mono=True, bg=WHITE)
            _arrow(ax, (x + bw / 2, 0.87), (x + bw / 2, y - 0.04), lw=1.3)
            _text(ax, x + bw / 2 + 0.08, (0.87 + y) / 2, "rows 0..T-1", size=9, color=MUTED, ha="left", mono=True)
        x = end
    _text(ax, x + 0.05, y + bh / 2 + 0.14, "vectors", weight="bold", size=10.5, ha="left")
    _text(ax, x + 0.05, y + bh / 2 - 0.14, f"(B, T, {d_model})", mono=True, size=10, ha="left")
    _text(ax, 0.15, height - 0.3, f"dropout(emb(ids) * sqrt(d_model) + PE[:T]), with d_model = {d_model} and "
          f"max_len = {max_len}", ha="left", mono=True, size=10)
    return fig


# --- the pipeline chapter: windows ----------------------------------------------------------

def windows(T: int = 8, strides: tuple[int, ...] = (8, 4), n: int = 20) -> Figure:
    """The pipeline chapter's windows: the first ``n`` ids of the corpus (GPT-2's tokenizer), cut into
    windows of ``T`` inputs with their targets, the same ids shifted by one, at each stride."""
    from tokvec import bytebpe

    gpt2 = bytebpe.published("gpt2")
    stream = gpt2.encode(_corpus().splitlines()[0])[:n]      # the first document starts the stream
    width, cw, rh, x0 = 10.8, 0.44, 0.25, 1.85
    groups = [list(range(0, len(stream) - T, s)) for s in strides]   # as tokvec.windows.windows cuts them
    height = 1.45 + sum(0.5 + 0.62 * len(g) for g in groups) + 0.35
    fig, ax = _canvas(width, height)
    ytop = height - 0.3
    _text(ax, 0.2, ytop, f"the first {n} ids of the corpus (GPT-2's tokenizer), windows of T = {T}", ha="left",
          weight="bold", size=10.5)
    ys = ytop - 0.75
    for j, v in enumerate(stream):
        _box(ax, x0 + j * cw, ys, cw, rh, v, fill=ID, mono=True, size=7)
        piece = gpt2.decode([v]).replace(" ", "\u2423")
        _text(ax, x0 + j * cw + cw / 2, ys - 0.04 - 0.15 * (j % 2), piece, mono=True, size=7, color=MUTED, va="top")
        _text(ax, x0 + j * cw + cw / 2, ys + rh + 0.04, j, size=6.5, color=MUTED, va="bottom")
    _text(ax, x0 - 0.1, ys + rh / 2, "ids", ha="right", size=9)
    _text(ax, x0 - 0.1, ys + rh + 0.1, "index", ha="right", size=7.5, color=MUTED)
    y = ys - 0.55
    for stride, starts in zip(strides, groups):
        tail = len(stream) - (starts[-1] + T + 1)
        how = "that touch" if stride == T else ("that overlap: shared ids are predicted twice" if stride < T
                                                else "with gaps between them")
        _text(ax, 0.2, y, f"stride = {stride}: {len(starts)} windows, {how}; the last {tail} ids are in none",
              ha="left", size=9.5, weight="bold")
        y -= 0.15
        for k, s in enumerate(starts):
            _text(ax, 0.2, y - rh / 2, f"window {k}", ha="left", size=8.5)
            _text(ax, 0.2, y - rh * 1.5, f"start {s}", ha="left", size=7.5, color=MUTED)
            _text(ax, x0 - 0.1, y - rh / 2, "inputs", ha="right", size=7.5)
            _text(ax, x0 - 0.1, y - rh * 1.5, "targets", ha="right", size=7.5)
            for j in range(T):
                _box(ax, x0 + (s + j) * cw, y - rh, cw, rh, stream[s + j], fill=ID, mono=True, size=7, lw=0.9)
                _box(ax, x0 + (s + 1 + j) * cw, y - 2 * rh, cw, rh, stream[s + 1 + j], fill=WHITE, hatch="////",
                     mono=True, size=7, lw=0.9)
            y -= 0.62
        y -= 0.35
    _text(ax, 0.2, 0.2, "The target at position t is the input at t + 1: the id the model must predict after "
          "reading inputs 0..t.", ha="left", size=8.5, color=MUTED)
    return fig


def batches(T: int = 8, B: int = 4) -> Figure:
    """The pipeline chapter's batches, drawn small: ``B`` windows of ``T`` ids (stride ``T``) drawn from
    the corpus's stream (GPT-2's tokenizer) in a shuffled order, stacked into a (B, T) tensor of inputs
    and one of targets; only the inputs go through the layer."""
    import random

    from tokvec import bytebpe

    gpt2 = bytebpe.published("gpt2")
    stream = gpt2.encode("<|endoftext|>".join(_corpus().splitlines()))   # the chapter's stream
    starts = range(0, len(stream) - T, T)             # as tokvec.windows.windows cuts them, stride T
    n = len(starts)
    picked = random.Random(0).sample(range(n), B)     # a shuffled order (the chapter's DataLoader draws its own)
    rows = [(stream[starts[k]:starts[k] + T], stream[starts[k] + 1:starts[k] + T + 1]) for k in picked]
    assert all(y[:-1] == x[1:] for x, y in rows)
    d_model, ch_B, ch_T = 64, 12, 32                  # the chapter's sizes
    width, height = 10.6, 5.6
    fig, ax = _canvas(width, height)
    _text(ax, 0.2, height - 0.3, "a batch: B windows from the dataset, in a shuffled order, stacked into "
          "two (B, T) tensors", ha="left", weight="bold", size=11)
    _text(ax, 0.2, height - 0.6, f"drawn small: B = {B}, T = {T}, stride {T} ({n} windows); chapter 10 uses "
          f"B = {ch_B}, T = {ch_T}, stride {ch_T}, d_model = {d_model}", ha="left", size=9.5, color=MUTED)
    # the dataset: every window, top to bottom, the picked ones marked
    bx, bw, btop, bbot = 0.35, 0.32, height - 1.25, 0.95
    _text(ax, bx + bw / 2, btop + 0.2, f"dataset: {n} windows", size=9.5, weight="bold", ha="left")
    _box(ax, bx, bbot, bw, btop - bbot, fill=ID, lw=1.0)
    _text(ax, bx - 0.05, btop - 0.05, "0", size=8.5, color=MUTED, ha="right", va="top", mono=True)
    _text(ax, bx - 0.05, bbot + 0.05, n - 1, size=8.5, color=MUTED, ha="right", va="bottom", mono=True)
    cw, rh = 0.52, 0.3
    gx = 2.75
    ti = height - 1.6                                  # top of the inputs
    tt = ti - B * rh - 0.75                           # top of the targets
    for b, (k, (x, y)) in enumerate(zip(picked, rows)):
        yk = btop - (k + 0.5) / n * (btop - bbot)
        _box(ax, bx - 0.04, yk - 0.035, bw + 0.08, 0.07, fill=HERE, lw=1.2, zorder=6)
        _text(ax, bx + bw + 0.1, yk, k, size=9, mono=True, weight="bold", ha="left")
        yr = ti - (b + 0.5) * rh
        _arrow(ax, (bx + bw + 0.5, yk), (gx - 0.6, yr), lw=1.0, scale=9)
        for top, values, fill, hatch in ((ti, x, ID, None), (tt, y, WHITE, "//")):
            _text(ax, gx - 0.1, top - (b + 0.5) * rh, f"b={b}", size=9, mono=True, ha="right")
            for t, v in enumerate(values):
                _box(ax, gx + t * cw, top - (b + 1) * rh, cw, rh, v, fill=fill, hatch=hatch, mono=True,
                     size=8.5, lw=0.8)
    for t in range(T):
        _text(ax, gx + t * cw + cw / 2, ti + 0.04, f"t={t}", size=8, color=MUTED, va="bottom", mono=True)
    _text(ax, gx, ti + 0.3, f"inputs x: (B, T) = ({B}, {T})", ha="left", weight="bold", size=10)
    _text(ax, gx, tt + 0.15, f"targets y: (B, T) = ({B}, {T}), each row its inputs shifted by one", ha="left",
          weight="bold", size=10)
    # only the inputs go through the layer
    right = gx + T * cw
    ym = ti - B * rh / 2
    sx = right + 1.3
    _arrow(ax, (right + 0.1, ym), (sx - 0.35, ym), lw=1.5)
    _text(ax, (right + sx - 0.25) / 2, ym + 0.12, "layer(x)", size=10, mono=True, va="bottom")
    _text(ax, (right + sx - 0.25) / 2, ym - 0.12, "chapter 9's\nlayer", size=9, color=MUTED, va="top")
    fw, fh, dx, dy = T * 0.17, 0.6, 0.15, 0.12
    _slab_stack(ax, sx, ym - fh / 2, fw, fh, B, dx, dy, fill=SUM, dims=("T", "d", "B"))
    _text(ax, sx + fw / 2, ym - fh / 2 - 0.3, f"vectors: (B, T, d_model)\n= ({B}, {T}, {d_model})", size=9.5,
          mono=True, va="top", weight="bold")
    _text(ax, right + 0.2, tt - B * rh / 2, "the targets stay ids:\nno layer reads them; a loss\ncompares them "
          "with the model's\npredictions, position by position", ha="left", size=9.5, color=MUTED)
    eot = gpt2.encode("<|endoftext|>")[0]
    starting = [k for k, (x, _) in zip(picked, rows) if eot in x]
    if starting:
        _text(ax, gx, ti - B * rh - 0.08, f"{eot} is <|endoftext|>: window {starting[0]} holds a document "
              "boundary", ha="left", va="top", size=8.5, color=MUTED)
    ch_n = len(range(0, len(stream) - ch_T, ch_T))    # the chapter's 128 windows
    _text(ax, 0.2, 0.35, "A DataLoader stacks B windows at a time, in a new shuffled order every epoch; drop_last "
          f"leaves out\nthe incomplete last batch ({n} % {B} = {n % B} windows here, {ch_n} % {ch_B} = "
          f"{ch_n % ch_B} in the chapter).", ha="left", size=9, color=MUTED)
    return fig


def boundary(T: int = 32, show: tuple[int, int] = (11, 21)) -> Figure:
    """The pipeline chapter's window across a document boundary: its dataset (GPT-2's tokenizer, T = 32,
    stride 32), the window with an <|endoftext|> nearest the middle, its inputs and targets around the
    separator, and the positions that keep counting after it; positions ``show`` are drawn in full."""
    from tokvec import bytebpe
    from tokvec.windows import WindowDataset, join_documents

    gpt2 = bytebpe.published("gpt2")
    eot_id = gpt2.special_tokens["<|endoftext|>"]
    documents = _corpus().splitlines()
    stream = join_documents([gpt2.encode_ordinary(doc) for doc in documents], eot_id)
    dataset = WindowDataset(stream, context_length=T, stride=T)
    crossing, seeing = [], 0                          # as the chapter finds them
    for k in range(len(dataset)):
        at = (dataset[k][0] == eot_id).nonzero().flatten().tolist()
        if at:
            crossing.append((k, at[0]))
            seeing += T - at[0]
    k, j = min(crossing, key=lambda c: abs(c[1] - T // 2))
    x, y = (v.tolist() for v in dataset[k])
    assert x[j] == eot_id and y[j - 1] == eot_id and eot_id not in x[:j]
    doc = stream[:dataset.starts[k]].count(eot_id)    # the document the window starts in

    def piece(v):
        return "<|endoftext|>" if v == eot_id else gpt2.decode([v]).replace(" ", "\u2423")

    width, height = 10.8, 5.35
    fig, ax = _canvas(width, height)
    _text(ax, 0.2, height - 0.3, f"window {k} of the chapter's {len(dataset)} (T = {T}, stride {T}): "
          f"<|endoftext|> at position {j}", ha="left", weight="bold", size=10.5)
    # (a) the whole window, one cell a position
    x0, cw, ow = 1.25, 0.255, 0.225
    ya = height - 1.05
    before, after, sep = dict(fill=TOKEN), dict(fill=VECTOR, hatch="...."), dict(fill=HERE, hatch="//", lw=2.0)
    for t in range(T):
        _box(ax, x0 + t * cw, ya, ow, 0.3, **(sep if t == j else (before if t < j else after)))
        if t % 4 == 0 or t in (j, j + 1, T - 1):
            _text(ax, x0 + t * cw + ow / 2, ya + 0.34, t, size=7, color=MUTED, va="bottom", mono=True)
    _text(ax, x0 - 0.1, ya + 0.15, "inputs", ha="right", size=9)
    _text(ax, x0 - 0.1, ya + 0.45, "position", ha="right", size=7.5, color=MUTED)
    yb = ya - 0.1
    ax.plot([x0, x0 + j * cw - 0.03], [yb, yb], color=INK, lw=1.0)
    ax.plot([x0 + (j + 1) * cw, x0 + T * cw - 0.03], [yb, yb], color=INK, lw=1.0)
    _text(ax, x0 + j * cw / 2, yb - 0.05, f"document {doc}: its last {j} tokens", size=8.5, va="top")
    _text(ax, x0 + (j + 1 + T) * cw / 2, yb - 0.05, f"document {doc + 1}: its first {T - j - 1} tokens, "
          f"positions {j + 1} to {T - 1}", size=8.5, va="top")
    _text(ax, x0 + T * cw + 0.12, ya + 0.15, f"{T - j} of {T}\npredictions see\nan earlier document", ha="left",
          size=8.5)
    # (b) around the separator, input against target
    lo, hi = show
    n = hi - lo + 1
    bw = (width - 1.45 - 0.2) / n
    heading = ya - 0.75
    _text(ax, 0.2, heading, f"positions {lo} to {hi}: at position t the model has read inputs 0..t and must "
          "predict the target at t", ha="left", size=9.5, weight="bold")
    yi = heading - 1.5
    yt = yi - 0.62
    col = {t: 1.45 + (t - lo) * bw + bw / 2 - 0.02 for t in range(lo, hi + 1)}
    for t in range(lo, hi + 1):
        cx = col[t] - bw / 2 + 0.02
        _text(ax, col[t], yi + 0.5, f"t={t}", size=8, mono=True, color=MUTED, va="bottom", bg=WHITE)
        sep_in, sep_out = x[t] == eot_id, y[t] == eot_id
        _box(ax, cx, yi, bw - 0.04, 0.42, "", **(sep if sep_in else (before if t < j else after)))
        _text(ax, col[t], yi + 0.27, piece(x[t]), size=7 if sep_in else 8, mono=True, bg=WHITE)
        _text(ax, col[t], yi + 0.09, x[t], size=6.5, mono=True, color=MUTED, bg=WHITE)
        _arrow(ax, (col[t], yi - 0.02), (col[t], yt + 0.44), lw=0.8, scale=7)
        _box(ax, cx, yt, bw - 0.04, 0.42, "", fill=WHITE, hatch="////", lw=2.0 if (sep_out or sep_in) else 0.9)
        _text(ax, col[t], yt + 0.27, piece(y[t]), size=7 if sep_out else 8, mono=True, bg=WHITE)
        _text(ax, col[t], yt + 0.09, y[t], size=6.5, mono=True, color=MUTED, bg=WHITE)
    _text(ax, 1.35, yi + 0.21, "input", ha="right", size=9)
    _text(ax, 1.35, yt + 0.21, "target", ha="right", size=9)
    # attention after the separator can still read the previous document: a causal mask only
    src = j + 3
    for dst, peak in ((j - 2, 0.3), (j - 4, 0.48)):
        dist = col[src] - col[dst]
        _arrow(ax, (col[src], yi + 0.44), (col[dst], yi + 0.44), lw=1.0, rad=2 * peak / dist, ls="--", scale=8)
    _text(ax, (col[src] + col[j - 4]) / 2, yi + 1.1, f"attention at t = {src} can still read document {doc}: "
          "a causal mask alone does not stop it", size=8.5, va="bottom", style="italic")
    # what is special about the three columns at the boundary
    below = yt - 0.1
    _text(ax, col[j - 1] + bw / 2 - 0.02, below, "target <|endoftext|>:\nlearns to end a document", ha="right",
          va="top", size=8, weight="bold")
    _text(ax, col[j + 1] - bw / 2 + 0.02, below, f"'{piece(x[j + 1])}' sits at position {j + 1}, not 0:\n"
          "the positions keep counting", ha="left", va="top", size=8, weight="bold")
    ax.plot([col[j], col[j]], [below, below - 0.42], color=INK, lw=0.8)
    _text(ax, col[j], below - 0.45, f"at the separator: guesses the first token of document {doc + 1}, "
          "from text unrelated to it", va="top", size=8, weight="bold")
    _text(ax, 0.2, 0.22, f"Over all {len(dataset)} windows: {len(crossing)} hold an <|endoftext|>, and "
          f"{seeing:,} of {len(dataset) * T:,} predictions ({seeing / (len(dataset) * T):.1%}) see an earlier "
          "document.", ha="left", size=8.5, color=MUTED)
    return fig


# --- the registry, saving, the command line --------------------------------------------------

#: Every figure by its file name (without extension): what ``make figures`` writes.
FIGURES: dict[str, Callable[[], Figure]] = {
    "pipeline": pipeline,
    **{f"pipeline-ch{n:02d}": (lambda n=n: pipeline_here(n)) for n in CHAPTER_STAGES},
    "bpe-merge": bpe_merge,
    "merge-chain": merge_chain,
    "utf8-bytes": utf8_bytes,
    "vocabulary": vocabulary,
    "gradient-rows": gradient_rows,
    "lookup": lookup,
    "layouts": layouts,
    "positions": positions,
    "rotation": rotation,
    "id-vs-position": id_vs_position,
    "odd-columns": odd_columns,
    "shapes": shapes,
    "layer": layer,
    "windows": windows,
    "batches": batches,
    "boundary": boundary,
}


def draw(name: str) -> Figure:
    """The figure called ``name`` (a key of :data:`FIGURES`), drawn with the course's settings."""
    if name not in FIGURES:
        raise KeyError(f"no figure {name!r}; the figures are: {', '.join(FIGURES)}")
    with _style():
        return FIGURES[name]()


def save(fig: Figure, outdir: Path, name: str) -> tuple[Path, Path]:
    """Write ``fig`` as ``outdir/<name>.svg`` (deterministic) and ``outdir/<name>.png`` (about
    :data:`PNG_WIDTH_PX` pixels wide); return the two paths."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    svg, png = outdir / f"{name}.svg", outdir / f"{name}.png"
    with _style():
        fig.savefig(svg, format="svg", facecolor=WHITE, metadata={"Date": None})
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=PNG_WIDTH_PX / fig.get_figwidth(), facecolor=WHITE)
    # A drawing has few colours: a 64-colour palette keeps it sharp at a third of the bytes, which
    # every student notebook carries as base64.
    image = Image.open(buffer).convert("RGB")
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(png, optimize=True)
    return svg, png


def write_all(outdir: Path, names: list[str] | None = None) -> list[Path]:
    """Draw and save every figure (or those in ``names``) into ``outdir``; return the files written."""
    written = []
    for name in names or list(FIGURES):
        written.extend(save(draw(name), outdir, name))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokvec.course.figures", description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path, help="folder to write <name>.svg and <name>.png into")
    parser.add_argument("names", nargs="*", help=f"figures to draw (default: all): {', '.join(FIGURES)}")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in FIGURES]
    if unknown:
        print(f"no figure {unknown}; the figures are: {', '.join(FIGURES)}", file=sys.stderr)
        return 2
    for path in write_all(args.outdir, args.names or None):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
