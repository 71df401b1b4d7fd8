// Implementation pending: see image.h.
