"""A paged KV cache, as a serving engine keeps one, and attention of one decoding query over it, in NumPy.

Shape legend, used in every docstring and comment below:

    N      number of blocks in the pool
    b      block size (token slots per block)
    H      number of heads
    d_k    width of one head
    L      tokens stored for one sequence
    n      number of token positions asked about

A serving engine decodes many sequences at once, and their lengths are not
known in advance. Instead of one long array per sequence it keeps a **pool**
of fixed-size blocks, ``key_blocks`` and ``value_blocks``, each ``(N, b, H,
d_k)``, and gives every sequence a **block table**: the numbers of the
blocks that hold its tokens, in the order of its tokens. Token ``p`` of a
sequence lives in the table's block ``p // b``, at offset ``p % b`` in it.

Blocks are handed out one at a time, only when a sequence's last block is
full, so at most ``b - 1`` slots of a sequence are ever unused: the slots
after its last token in its last block. Those slots may still hold the
tokens of a sequence that used the block before: they are never read.
"""

import numpy as np


def slot_mapping(block_table, positions, block_size):
    """Where token positions of one sequence live in the pool, as flat slot numbers.

    Args:
        block_table: ``(number of blocks,)`` ints, the sequence's physical
            block numbers in the order of its tokens (a list or an array).
        positions: ``(n,)`` ints, token positions of the sequence, each below
            ``len(block_table) * block_size``, in any order.
        block_size: ``b``, the token slots of one block.

    Returns:
        ``(n,)`` ints: for position ``p``, ``block * b + offset``, where
        ``block`` is the table's entry ``p // b`` and ``offset`` is ``p % b``
        (so the slot indexes the pool seen as ``(N * b, H, d_k)``).
    """
    # TODO: implement slot_mapping.
    # TODO：实现 slot_mapping。
    # Hint: the table's entry number position // block_size is the physical block and position % block_size the offset in it; the flat slot is block * block_size + offset.
    # 提示：表中第 position // block_size 项才是物理块号，position % block_size 是块内偏移；扁平槽位号是 块号 * block_size + 偏移。
    raise NotImplementedError("slot_mapping: not implemented yet / 尚未实现")


def gather(blocks, block_table, length):
    """One sequence's keys (or values), read from its blocks into one contiguous array.

    Args:
        blocks: ``(N, b, H, d_k)``, the pool of key (or value) blocks, left unchanged.
        block_table: ``(number of blocks,)`` ints, the sequence's blocks in order.
        length: ``L``, the sequence's number of tokens (at most
            ``len(block_table) * b``).

    Returns:
        ``(L, H, d_k)``: the sequence's tokens in order, the blocks taken in
        the table's order and the slots after the last token left out
        (``slot_mapping`` of positions 0 to L - 1 says where each one is).
    """
    # TODO: implement gather.
    # TODO：实现 gather。
    # Hint: see the pool as (N * b, H, d_k) flat slots and take the slots of positions 0 to length - 1 (slot_mapping), in that order; or index the pool with the table itself (never sorted) and keep the first length tokens.
    # 提示：把池看成 (N * b, H, d_k) 的扁平槽位，按顺序取出位置 0 到 length - 1 的槽位（slot_mapping）；或者直接用块表（绝不排序）索引池，再只保留前 length 个词元。
    raise NotImplementedError("gather: not implemented yet / 尚未实现")


def decode_attention(query, keys, values):
    """Attention of one new token's query over a sequence's cached keys and values.

    Args:
        query: ``(H, d_k)``, the newest token's query, one row per head.
        keys: ``(L, H, d_k)``.
        values: ``(L, H, d_k)``.

    Returns:
        ``(H, d_k)``: for each head, the softmax over the L tokens of
        ``query . key / sqrt(d_k)``, applied to the values. Scores of
        +-1000 must not overflow: subtract each head's largest score first.
        No mask is needed: every cached token comes before the query.
    """
    # TODO: implement decode_attention.
    # TODO：实现 decode_attention。
    # Hint: score every cached token per head (H, L), divide by sqrt(d_k), subtract each head's maximum before exp, normalise over L, then weight the values.
    # 提示：按头给每个缓存词元打分得到 (H, L)，除以 sqrt(d_k)，取指数前减去每个头的最大值，沿 L 归一化，再对值加权求和。
    raise NotImplementedError("decode_attention: not implemented yet / 尚未实现")


class PagedKVCache:
    """A pool of key and value blocks shared by many sequences.

    Attributes:
        block_size: ``b``.
        key_blocks: ``(N, b, H, d_k)``, zeros until written.
        value_blocks: ``(N, b, H, d_k)``.
        free_blocks: the numbers of the blocks no sequence holds, used as a
            stack: the next block handed out is ``free_blocks.pop()``, the last one.
        block_tables: sequence id -> list of its block numbers, in order.
        lengths: sequence id -> number of tokens stored.
    """

    def __init__(self, num_blocks, block_size, num_heads, head_dim):
        self.block_size = block_size
        self.key_blocks = np.zeros((num_blocks, block_size, num_heads, head_dim))  # (N, b, H, d_k)
        self.value_blocks = np.zeros((num_blocks, block_size, num_heads, head_dim))  # (N, b, H, d_k)
        self.free_blocks = list(range(num_blocks))
        self.block_tables = {}
        self.lengths = {}

    def block_table(self, seq):
        """The block table of ``seq`` as an int array (empty for a sequence the cache does not hold)."""
        return np.array(self.block_tables.get(seq, []), dtype=np.int64)

    def append(self, seq, keys, values):
        """Store the keys and values of new tokens after the ones ``seq`` already has.

        Args:
            seq: the sequence's id; a new id starts an empty sequence.
            keys: ``(T, H, d_k)``, the new tokens' keys, in order (T = 1 when decoding).
            values: ``(T, H, d_k)``.

        Returns:
            None. Token by token: when every slot of the sequence's blocks is
            taken (or it has none yet), a block is taken off the free list
            (``free_blocks.pop()``) and added at the end of its table; the
            token is then written at its slot (``slot_mapping``), and the
            sequence's length grows by one.

        Raises:
            RuntimeError: a block is needed and none is free.
        """
        # TODO: implement append.
        # TODO：实现 append。
        # Hint: for each new token: when its position equals the slots held so far (blocks in the table times the block size), pop a free block onto the table first; then write the token at the slot of its position and count it in the length.
        # 提示：对每个新词元：若它的位置等于目前已占有的槽位数（块表中的块数乘以块大小），先从空闲列表 pop 一个块加到块表末尾；再把词元写到该位置的槽位，并计入长度。
        raise NotImplementedError("append: not implemented yet / 尚未实现")

    def free(self, seq):
        """Forget a finished sequence and give its blocks back to the pool.

        Args:
            seq: the id of a sequence the cache holds.

        Returns:
            None. The sequence's blocks go back onto ``free_blocks`` (in
            any order), ready for other sequences; its table and length are
            removed. The blocks' contents stay as they are: whoever takes
            them next writes over them.
        """
        # TODO: implement free.
        # TODO：实现 free。
        # Hint: remove the sequence's table and length, and put its blocks back on free_blocks; there is no need to clear them.
        # 提示：删除该序列的块表和长度，并把它的块放回 free_blocks；不必清空块的内容。
        raise NotImplementedError("free: not implemented yet / 尚未实现")

    def attend(self, seq, query):
        """Attention of ``seq``'s newest query over every token the cache holds for it.

        Args:
            seq: the id of a sequence the cache holds.
            query: ``(H, d_k)``.

        Returns:
            ``(H, d_k)``: ``decode_attention`` over the sequence's keys and
            values, gathered from its blocks (its L tokens, nothing else).
        """
        # TODO: implement attend.
        # TODO：实现 attend。
        # Hint: gather the keys and the values with the sequence's table and its length (not the full blocks), then hand them, with the query, to `decode_attention`.
        # 提示：用该序列的块表和它的长度（而不是整块）取出键和值，再连同查询一起交给 `decode_attention`。
        raise NotImplementedError("attend: not implemented yet / 尚未实现")
