"""The PDF report: a main report of a few pages (claims, the headline on one page, the atlas
maps, the privacy summary) and an appendix with every other page, its contents and bookmarks
(`outline`). `build` assembles both, one module per page or group of pages: `summary_page`,
`headline_page`, `title_pages`, `claims_pages`, `scaling_pages`, `loss_curve_pages`,
`moment_pages`, `cell_pages`, `privacy_page`, `methods_text`, on the primitives of `layout`), its
plots and loss curves, and the claims tables for papers (`tables`)."""
