"""ESAC-AG's distribution per major: 70 capability points in 14 tasks plus the 5-point efficiency modifier, as
amendment 001 §1 fixes it and specs/esac-ag.md states it; the loader asserts the manifest against it."""

from esac_kit.distribution import Distribution

# amendment 001 §1 keeps ESAC-AG at 75 points, 70 capability + 5 efficiency, not one release: the hardened 2.x keeps
# it (SPEC §9 hardens the tasks, not the table). Figures as in specs/esac-ag.md "Categories".
ESAC_AG = Distribution(
    source="amendment 001 §1, specs/esac-ag.md",
    categories={category: (10, 2) for category in
                ("tools", "planning", "research", "data", "repair", "recovery", "safety")},
    total_items=14,
    efficiency_points=5,
)
assert (ESAC_AG.capability_points, ESAC_AG.total_points) == (70, 75)

DISTRIBUTIONS = {"ag": {1: ESAC_AG, 2: ESAC_AG}}
