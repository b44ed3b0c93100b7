"""The twins' byte-level BPE tokenizer, loaded from a `tokenizers` JSON, with per-token display strings."""

from __future__ import annotations

import codecs
from functools import lru_cache
from pathlib import Path

EOS, MASK, PAD = "<|endoftext|>", "<|mask|>", "<|pad|>"


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's printable-character stand-ins for bytes, inverted (the alphabet ByteLevel BPE uses)."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
            + list(range(ord("®"), ord("ÿ") + 1)))
    chars = keep[:]
    n = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(keep, chars)}


def byte_chars() -> list[str]:
    """The character ByteLevel BPE writes for each byte 0..255 (for a second encoder, the browser's, to use as is)."""
    chars = {b: c for c, b in _byte_decoder().items()}
    return [chars[b] for b in range(256)]


class BPETokenizer:
    """Wraps `tokenizers.Tokenizer`; special tokens decode to nothing so text stays clean."""

    def __init__(self, path: str | Path):
        from tokenizers import Tokenizer

        self.path = Path(path)
        self._tok = Tokenizer.from_file(str(path))
        self.eos_id = self._require(EOS)
        self.mask_id: int | None = self._require(MASK)
        self.pad_id = self._require(PAD)
        self.vocab_size = self._tok.get_vocab_size()
        dec = _byte_decoder()
        specials = {self.eos_id, self.mask_id, self.pad_id}
        self._bytes: list[bytes] = []
        for i in range(self.vocab_size):
            piece = self._tok.id_to_token(i) or ""
            self._bytes.append(b"" if i in specials else bytes(dec[c] for c in piece if c in dec))

    def _require(self, token: str) -> int:
        i = self._tok.token_to_id(token)
        if i is None:
            raise ValueError(f"tokenizer {self.path} has no {token} token")
        return i

    def encode(self, text: str) -> list[int]:
        """Text to ids, no special tokens added."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int]) -> str:
        """Ids to text; special tokens (end-of-text, mask, pad) contribute nothing."""
        return b"".join(self._bytes[int(i)] for i in ids).decode("utf-8", errors="replace")

    def token_strings(self, ids: list[int]) -> list[str]:
        """One display string per id that concatenate to decode(ids); a token holding only part
        of a multi-byte character shows as "" and its bytes appear with the token that completes it."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        ids = list(ids)
        return [decoder.decode(self._bytes[int(i)], final=(k == len(ids) - 1)) for k, i in enumerate(ids)]

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes of one token (empty for special tokens)."""
        return self._bytes[int(token_id)]
