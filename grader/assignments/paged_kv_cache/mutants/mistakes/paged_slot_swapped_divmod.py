# expect: paged-slot-swapped
"""divmod unpacked the wrong way round."""

import math

import numpy as np


def slot_mapping(block_table, positions, block_size):
    slots = np.empty(len(positions), dtype=np.int64)
    for i, p in enumerate(positions):
        offset, block = divmod(int(p), block_size)
        slots[i] = int(block_table[block]) * block_size + offset
    return slots


def gather(blocks, block_table, length):
    block_size = blocks.shape[1]
    rows = []
    for p in range(length):
        rows.append(blocks[block_table[p // block_size], p % block_size])
    return np.stack(rows)


def decode_attention(query, keys, values):
    heads, width = query.shape
    out = np.zeros((heads, width))
    for h in range(heads):
        scores = [float(np.dot(query[h], keys[t, h])) / math.sqrt(width) for t in range(len(keys))]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = sum(weights)
        for t in range(len(keys)):
            out[h] += weights[t] / total * values[t, h]
    return out


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
        if seq not in self.block_tables:
            self.block_tables[seq] = []
            self.lengths[seq] = 0
        table = self.block_tables[seq]
        for t in range(keys.shape[0]):
            n = self.lengths[seq]
            if n % self.block_size == 0:
                if len(self.free_blocks) == 0:
                    raise RuntimeError("the pool has no free block left")
                table.append(self.free_blocks.pop())
            block = table[n // self.block_size]
            self.key_blocks[block, n % self.block_size] = keys[t]
            self.value_blocks[block, n % self.block_size] = values[t]
            self.lengths[seq] = n + 1

    def free(self, seq):
        for block in self.block_tables[seq]:
            self.free_blocks.append(block)
        del self.block_tables[seq]
        del self.lengths[seq]

    def attend(self, seq, query):
        n, table = self.lengths[seq], self.block_tables[seq]
        return decode_attention(query, gather(self.key_blocks, table, n), gather(self.value_blocks, table, n))
