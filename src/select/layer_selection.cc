#include "select/layer_selection.h"

#include <algorithm>
#include <iterator>

namespace smartgen::select {

void SelectionDifference(const LayerSelection& want, const LayerSelection& have,
                         LayerSelection* out) {
  out->heads.resize(want.heads.size());
  for (std::size_t h = 0; h < want.heads.size(); ++h) {
    out->heads[h].clear();
    std::set_difference(want.heads[h].begin(), want.heads[h].end(), have.heads[h].begin(),
                        have.heads[h].end(), std::back_inserter(out->heads[h]));
  }
}

void SelectionUnion(const LayerSelection& want, const LayerSelection& also, LayerSelection* out) {
  out->heads.resize(want.heads.size());
  for (std::size_t h = 0; h < want.heads.size(); ++h) {
    out->heads[h].clear();
    std::set_union(want.heads[h].begin(), want.heads[h].end(), also.heads[h].begin(),
                   also.heads[h].end(), std::back_inserter(out->heads[h]));
  }
}

}  // namespace smartgen::select
