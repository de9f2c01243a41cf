# expect: correct
"""Block tables kept as NumPy arrays (np.append), np.take along the pool, SciPy's softmax imported lazily."""

import numpy as np


def slot_mapping(block_table, positions, block_size):
    positions = np.asarray(positions)
    return np.asarray(block_table)[positions // block_size] * block_size + np.mod(positions, block_size)


def gather(blocks, block_table, length):
    picked = np.take(blocks, np.asarray(block_table, dtype=int), axis=0)  # (n, b, H, d_k)
    return np.concatenate(list(picked), axis=0)[:length]


def decode_attention(query, keys, values):
    from scipy.special import softmax

    scores = np.sum(keys * query[None], axis=-1).T / np.sqrt(query.shape[-1])  # (H, L)
    return np.sum(softmax(scores, axis=-1).T[:, :, None] * values, axis=0)


class PagedKVCache:
    def __init__(self, num_blocks, block_size, num_heads, head_dim):
        self.block_size = block_size
        self.key_blocks = np.zeros((num_blocks, block_size, num_heads, head_dim))
        self.value_blocks = np.zeros((num_blocks, block_size, num_heads, head_dim))
        self.free_blocks = list(range(num_blocks))
        self.block_tables = {}
        self.lengths = {}

    def block_table(self, seq):
        return np.array(self.block_tables.get(seq, []), dtype=np.int64)

    def append(self, seq, keys, values):
        table = self.block_tables.get(seq, np.zeros(0, dtype=int))
        length = self.lengths.get(seq, 0)
        for token in range(len(keys)):
            if length == table.size * self.block_size:
                if not self.free_blocks:
                    self.block_tables[seq], self.lengths[seq] = table, length
                    raise RuntimeError("KV pool exhausted")
                table = np.append(table, self.free_blocks.pop())
            slot = slot_mapping(table, [length], self.block_size)[0]
            self.key_blocks[slot // self.block_size, slot % self.block_size] = keys[token]
            self.value_blocks[slot // self.block_size, slot % self.block_size] = values[token]
            length += 1
        self.block_tables[seq], self.lengths[seq] = table, length

    def free(self, seq):
        self.free_blocks.extend(int(block) for block in self.block_tables.pop(seq)[::-1])
        self.lengths.pop(seq)

    def attend(self, seq, query):
        k = gather(self.key_blocks, self.block_tables[seq], self.lengths[seq])
        v = gather(self.value_blocks, self.block_tables[seq], self.lengths[seq])
        return decode_attention(query, k, v)
