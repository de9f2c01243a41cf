# expect: paged-shared-block
"""Each sequence numbers its blocks 0, 1, 2, ..."""

import numpy as np


def slot_mapping(block_table, positions, block_size):
    q, r = np.divmod(np.asarray(positions), block_size)
    return np.take(np.asarray(block_table), q) * block_size + r


def gather(blocks, block_table, length):
    n, b = blocks.shape[:2]
    flat = blocks.reshape(n * b, *blocks.shape[2:])
    return flat[slot_mapping(block_table, np.arange(length), b)]


def decode_attention(query, keys, values):
    s = np.einsum("lhd,hd->hl", keys, query) * query.shape[-1] ** -0.5
    log_w = s - np.logaddexp.reduce(s, axis=1, keepdims=True)
    return np.einsum("hl,lhd->hd", np.exp(log_w), values)


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
        table = self.block_tables.setdefault(seq, [])
        start = self.lengths.get(seq, 0)
        stop = start + len(keys)
        needed = -(-stop // self.block_size)
        if needed > len(self.free_blocks) + len(table):
            raise RuntimeError(f"no free block for {seq}")
        table.extend(range(len(table), needed))
        slots = slot_mapping(table, np.arange(start, stop), self.block_size)
        head_shape = self.key_blocks.shape[2:]
        self.key_blocks.reshape(-1, *head_shape)[slots] = keys
        self.value_blocks.reshape(-1, *head_shape)[slots] = values
        self.lengths[seq] = stop

    def free(self, seq):
        self.free_blocks += self.block_tables.pop(seq)
        self.lengths.pop(seq)

    def attend(self, seq, query):
        table, n = self.block_tables[seq], self.lengths[seq]
        return decode_attention(query, gather(self.key_blocks, table, n), gather(self.value_blocks, table, n))
