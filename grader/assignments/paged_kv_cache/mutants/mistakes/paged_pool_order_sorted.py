# expect: paged-pool-order
"""Sorts the table before reading the blocks."""

import numpy as np


def slot_mapping(block_table, positions, block_size):
    positions = np.array(positions, dtype=np.int64)
    table = np.array(block_table, dtype=np.int64)
    logical = positions // block_size
    return table[logical] * block_size + (positions - logical * block_size)


def gather(blocks, block_table, length):
    pieces = [blocks[int(i)] for i in sorted(block_table)]
    joined = np.concatenate(pieces, axis=0)
    return joined[:length].copy()


def decode_attention(query, keys, values):
    q = query.astype(np.float32)[:, None, :]                 # (H, 1, d_k)
    k = np.transpose(keys, (1, 2, 0)).astype(np.float32)     # (H, d_k, L)
    v = np.transpose(values, (1, 0, 2)).astype(np.float32)   # (H, L, d_k)
    scores = np.matmul(q, k) / np.float32(np.sqrt(q.shape[-1]))  # (H, 1, L)
    scores -= scores.max(axis=2, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=2, keepdims=True)
    return np.matmul(w, v)[:, 0, :]


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

    def _new_block(self):
        if not self.free_blocks:
            raise RuntimeError("out of KV blocks")
        return self.free_blocks.pop()

    def append(self, seq, keys, values):
        table = self.block_tables.get(seq)
        if table is None:
            table = self.block_tables[seq] = []
        used = self.lengths.get(seq, 0)
        i = 0
        while i < len(keys):
            capacity = len(table) * self.block_size
            if used == capacity:
                table.append(self._new_block())
                capacity += self.block_size
            take = min(capacity - used, len(keys) - i)   # tokens that fit in the last block
            block, offset = table[-1], used - (len(table) - 1) * self.block_size
            self.key_blocks[block, offset:offset + take] = keys[i:i + take]
            self.value_blocks[block, offset:offset + take] = values[i:i + take]
            used += take
            i += take
        self.lengths[seq] = used

    def free(self, seq):
        blocks = self.block_tables[seq]
        self.free_blocks.extend(blocks)
        self.block_tables.pop(seq)
        self.lengths.pop(seq)

    def attend(self, seq, query):
        keys = gather(self.key_blocks, self.block_tables[seq], self.lengths[seq])
        values = gather(self.value_blocks, self.block_tables[seq], self.lengths[seq])
        return decode_attention(query, keys, values)
