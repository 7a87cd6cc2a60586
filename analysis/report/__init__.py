"""The PDF report (`build`), its plots and loss curves, and the claims tables for papers."""
