"""The privacy machinery every family shares: clipping and the Gaussian and tree mechanisms
(`mechanisms`), the one accountant that calibrates all noise (`accounting`), and the planted
bugs the privacy checks must catch (`faults`)."""
