"""A toy generator with declared drivers, for the difficulty-band tests: its 'nodes' measure is a seeded draw."""

from esac_kit.rng import ItemRng
from esac_kit.schemas import ExactKey, Generated


def counted(rng: ItemRng, width: int, spread: int) -> Generated:
    """A sum of `width` seeded numbers; its 'nodes' measure is uniform in [0, spread)."""
    numbers = [rng.randint(1, 99) for _ in range(width)]
    nodes = rng.randrange(spread)
    return Generated(prompt=f"Add {numbers}. End with ANSWER: <n>", key=ExactKey(answer=str(sum(numbers)),
                     answer_type="number"), reference=f"ANSWER: {sum(numbers)}", difficulty={"nodes": nodes})
