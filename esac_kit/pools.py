"""Pools: the public seed from the manifest and the evaluator's held-out seed, which is never written (amendment 001 §3)."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from esac_kit.errors import ConfigError
from esac_kit.records import PoolRecord, describe_pool

HELDOUT_ENV = "ESAC_HELDOUT_SEED"
MIN_HELDOUT_SEED_CHARS = 16


@dataclass(frozen=True)
class Pool:
    """A named pool and its seed; the seed is kept out of repr so it cannot leak into logs or tracebacks."""

    name: str
    seed: str = field(repr=False)
    commitment: str | None = None

    @property
    def label(self) -> str:
        """What output may show of the pool: its name and the public seed or the commitment."""
        return describe_pool(self.name, self.commitment if self.name == "heldout" else self.seed)

    @property
    def record(self) -> PoolRecord:
        """What a run folder and its report keep of the pool: the seed, or for the held-out pool its commitment."""
        if self.name == "heldout":
            return PoolRecord(name="heldout", commitment=self.commitment)
        return PoolRecord(name=self.name, seed=self.seed)


def public_pool(public_seed: str) -> Pool:
    """The public pool: the self-checking and development surface (amendment 001 §3)."""
    return Pool("public", public_seed)


def custom_pool(seed: str) -> Pool:
    """A pool from an explicit, non-secret seed given on the command line."""
    return Pool("custom", seed)


def heldout_pool(seed_file: Path | None = None) -> Pool:
    """The held-out pool from ESAC_HELDOUT_SEED or a seed file; only its commitment ever leaves memory."""
    if seed_file is not None:
        try:
            seed = seed_file.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise ConfigError(f"cannot read the held-out seed file {seed_file}: {error.strerror}") from None
    else:
        seed = os.environ.get(HELDOUT_ENV, "").strip()
        if not seed:
            raise ConfigError(f"the held-out pool needs a seed: set {HELDOUT_ENV} or pass --heldout-seed-file FILE")
    if len(seed) < MIN_HELDOUT_SEED_CHARS:
        raise ConfigError(f"the held-out seed is too short to resist guessing: use at least "
                          f"{MIN_HELDOUT_SEED_CHARS} characters")
    return Pool("heldout", seed, heldout_commitment(seed))


def choose_pool(name: str, public_seed: str, seed: str | None = None, seed_file: Path | None = None) -> Pool:
    """A new run's pool: 'public', 'heldout' (seed from $ESAC_HELDOUT_SEED or seed_file) or 'custom' (seed)."""
    if name == "public":
        return public_pool(public_seed)
    if name == "heldout":
        return heldout_pool(seed_file)
    if name == "custom":
        if not seed:
            raise ConfigError("a custom pool needs a seed")
        return custom_pool(seed)
    raise ConfigError(f"unknown pool '{name}': public, heldout or custom")


def recorded_pool(record: PoolRecord, seed_file: Path | None = None) -> Pool:
    """A recorded run's pool again; a held-out one needs its seed once more, checked against the commitment."""
    if record.name != "heldout":
        return Pool(record.name, record.seed)
    pool = heldout_pool(seed_file)
    if not commitment_matches(pool.seed, record.commitment):
        raise ConfigError("the held-out seed given does not open this run's commitment")
    return Pool("heldout", pool.seed, record.commitment)


def heldout_commitment(seed: str, salt: bytes | None = None) -> str:
    """A salted SHA-256 commitment `sha256:<salt>:<digest>` that a later reveal of the seed can be checked against."""
    salt = secrets.token_bytes(16) if salt is None else salt
    digest = hashlib.sha256(salt + seed.encode()).hexdigest()
    return f"sha256:{salt.hex()}:{digest}"


def commitment_matches(seed: str, commitment: str) -> bool:
    """True when a revealed seed opens the commitment."""
    try:
        algorithm, salt_hex, _ = commitment.split(":")
        salt = bytes.fromhex(salt_hex)
    except ValueError:
        return False
    return algorithm == "sha256" and hmac.compare_digest(heldout_commitment(seed, salt), commitment)
