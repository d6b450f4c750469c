"""ESAC kit: generate every ESAC item from a seed, run models over HTTP, score them and report."""

__version__ = "0.1.0"
