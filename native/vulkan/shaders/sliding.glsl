// The sliding-window rule of attention in the shaders: the GLSL copy of backend/sliding-window.h (where the
// rule and its source, ik_llama.cpp's KQ_mask_swa, are described). A key at position p is visible to a query
// at position q iff p <= q and q − p < n_swa (n_swa 0: no window). Needs common.glsl.

bool in_window(int q_pos, int k_pos, int n_swa) { return k_pos <= q_pos && (n_swa <= 0 || q_pos - k_pos < n_swa); }

// The first of n entries with ascending positions pos.v[0 .. n) that a query at q_pos may see by the window
// (a binary search; every invocation of a group runs it alike).
int first_in_window(Ints pos, int n, int q_pos, int n_swa) {
  if (n_swa <= 0) return 0;
  int lo = 0, hi = n;  // entries [0, lo) are left of the window, [hi, n) are not
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (!in_window(q_pos, pos.v[mid], n_swa) && pos.v[mid] < q_pos) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
