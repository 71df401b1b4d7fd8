// Implementation pending: see tree.h.
