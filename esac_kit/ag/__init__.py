"""ESAC-AG: agentic tasks in seeded mock environments driven through native tool calling (amendment 001 §1)."""
