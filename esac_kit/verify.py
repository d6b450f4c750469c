"""What every suite's verify shares: the seeds it draws and the fresh-process check that instances are
reproducible across interpreters (amendment 001 §3, §4)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from esac_kit.errors import EsacError
from esac_kit.instances import generate
from esac_kit.pools import Pool
from esac_kit.schemas import Instance
from esac_kit.kinds import resolve
from esac_kit.suite import Suite, load_suite


def verification_pools(pool: Pool, n_seeds: int) -> list[Pool]:
    """The pool itself plus n-1 pools derived from its seed, so a held-out seed is verified without being shown."""
    derived = [Pool(pool.name, f"{pool.seed}/verify/{k}") for k in range(1, n_seeds)]
    return [pool, *derived]


def instance_digest(instances: list[Instance]) -> str:
    """A digest of instances' bytes, compared across processes."""
    digest = hashlib.sha256()
    for instance in instances:
        digest.update(instance.model_dump_json().encode())
    return digest.hexdigest()


class FreshProcessDigests:
    """Regenerate items in a new interpreter with another hash seed and digest them with `digest`
    (`module:function(suite, item, pools)`), running beside the caller's own checks; seeds travel on stdin, never
    argv."""

    def __init__(self, suite: Suite, pools: list[Pool], item_ids: list[str],
                 digest: str = "esac_kit.verify:instances_digest"):
        request = json.dumps({"items_dir": str(suite.folder.parent), "suite": suite.manifest.suite,
                              "seeds": [[p.name, p.seed] for p in pools], "items": item_ids, "digest": digest})
        env = {**os.environ, "PYTHONHASHSEED": "4242"}
        self._process = subprocess.Popen(
            [sys.executable, "-c", "from esac_kit.verify import _digests_main; _digests_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            cwd=Path(__file__).resolve().parent.parent)
        self._process.stdin.write(request)  # the child reads it whole before any work, so this never waits long
        self._process.stdin.close()
        self._process.stdin = None

    def __enter__(self) -> "FreshProcessDigests":
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if kind is not None:  # the caller failed before it needed the digests: stop the regeneration
            self.cancel()

    def result(self) -> dict[str, str]:
        """Wait for the regeneration and return each item's digest."""
        try:
            stdout, stderr = self._process.communicate(timeout=3600)
        except subprocess.TimeoutExpired:
            self._process.kill()
            raise EsacError("verify: the fresh-process regeneration ran past an hour") from None
        if self._process.returncode != 0:
            raise EsacError("verify: the fresh-process regeneration failed: "
                            + (stderr.strip().splitlines() or ["no output"])[-1])
        return json.loads(stdout)

    def cancel(self) -> None:
        """Stop the regeneration if it is still running."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.communicate()


def instances_digest(suite: Suite, item, pools: list[Pool]) -> str:
    """The digest of one item's instances over the pools."""
    return instance_digest([generate(suite, item, p) for p in pools])


def _digests_main() -> None:
    request = json.loads(sys.stdin.read())
    suite = load_suite(request["suite"], Path(request["items_dir"]))
    pools = [Pool(name, seed) for name, seed in request["seeds"]]
    digest = resolve(request["digest"])
    print(json.dumps({i: digest(suite, suite.item(i), pools) for i in request["items"]}))
