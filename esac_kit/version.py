"""A suite version, MAJOR.MINOR: the one parser of version strings and the bump rule's arithmetic (amendment 001 §9)."""

from __future__ import annotations

import re
from dataclasses import dataclass

PATTERN = r"^\d+\.\d+$"


@dataclass(frozen=True, order=True)
class Version:
    """A suite version; minors of one major compare, majors never do (amendment 001 §9)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> Version:
        """The version a "MAJOR.MINOR" string names, or a ValueError."""
        if not re.match(PATTERN, text):
            raise ValueError(f"'{text}' is not a MAJOR.MINOR version")
        major, minor = text.split(".")
        return cls(int(major), int(minor))

    def bumped(self, bump: str) -> Version:
        """The next version for a bump class: 'major' or 'minor'."""
        return Version(self.major + 1, 0) if bump == "major" else Version(self.major, self.minor + 1)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


def major_of(text: str) -> int:
    """The major part of a version string."""
    return Version.parse(text).major
