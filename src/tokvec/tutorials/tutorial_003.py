"""Source tutorial 003, Phuong & Hutter's Algorithms 1 and 2 in plain Python (cells In [1], [10],
[12] and [14]), verbatim.

Its errors, taught in chapters 3 and 7:

* ``generate_token_embedding_matrix`` fills token ``i``'s vector with the number ``i``: all
  vectors are parallel, token 0 is the zero vector, and the length grows with the id;
* ``generate_positional_embedding_matrix`` uses the element index ``i`` in the exponent, so the
  sine and the cosine of a pair get different frequencies (``sin^2 + cos^2 != 1``), and it uses
  ``l_max`` where Vaswani et al. use 10000;
* its *formula* reads ``W_p[:, x[t]]`` (a token id used as a position), while its code
  (``sentence_embedding``) takes the position from ``enumerate`` and is right.

Standard library only: the dictionaries map an id (or a position) to its vector.

Source: the Phuong and Hutter walkthrough (plain Python), one of the five tutorial texts the course starts from. Its authors and
address were not supplied with the text; the book's page "The source tutorials" (``sources.md``)
identifies it by its title, framework and form.
"""

__all__ = ["embed_by_position", "generate_positional_embedding_matrix",
           "generate_token_embedding_matrix", "sentence_embedding"]


def generate_token_embedding_matrix(d, v):
    embed_matrix = {i: [i]*d for i in range(v)}
    return embed_matrix


def generate_positional_embedding_matrix(d, l_max):
    from math import sin, cos

    pos_matrix = {}
    for t in range(l_max):
        pos_vector = []
        for i in range(d):
            c = t / (l_max ** (i/d))
            if i % 2 == 0:
                v = sin(c)
            else:
                v = cos(c)
            pos_vector.append(v)
        pos_matrix[t] = pos_vector
    return pos_matrix


def embed_by_position(token_id, position, embed_matrix, pos_matrix):
    embed_vector = embed_matrix[token_id]
    pos_vector = pos_matrix[position]
    result_vector = []
    for e, p in zip(embed_vector, pos_vector):
        result_vector.append(e+p)
    return result_vector


def sentence_embedding(sentence, embed_matrix, pos_matrix):
    embed_sentence = []
    for position, token_id in enumerate(sentence):
        token_vector = embed_by_position(token_id, position, embed_matrix, pos_matrix)
        embed_sentence.append(token_vector)
    return embed_sentence
