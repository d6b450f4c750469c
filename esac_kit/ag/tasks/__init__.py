"""The 14 ESAC-AG task generators, two per category (specs/esac-ag.md)."""
