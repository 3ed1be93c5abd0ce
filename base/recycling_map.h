#pragma once
// An unordered_map for entries that come and go all run long (payloads in transit, open
// op-log records): an erased entry's node is kept for the next insert, so the steady
// state allocates nothing. Holds at most as many spare nodes as entries were ever live.
#include <unordered_map>
#include <utility>
#include <vector>

namespace kb {

template <class Key, class Value>
class RecyclingMap {
 public:
  using Map = std::unordered_map<Key, Value>;

  // `key` must not be in the map.
  Value& insert(const Key& key, Value&& value) {
    if (spare_.empty()) return map_.emplace(key, std::move(value)).first->second;
    typename Map::node_type node = std::move(spare_.back());
    spare_.pop_back();
    node.key() = key;
    node.mapped() = std::move(value);
    return map_.insert(std::move(node)).position->second;
  }
  void erase(typename Map::iterator it) { spare_.push_back(map_.extract(it)); }
  void erase(const Key& key) {
    if (auto node = map_.extract(key)) spare_.push_back(std::move(node));
  }

  Value& at(const Key& key) { return map_.at(key); }
  typename Map::iterator find(const Key& key) { return map_.find(key); }
  typename Map::iterator begin() { return map_.begin(); }
  typename Map::iterator end() { return map_.end(); }
  void clear() {  // drops the spare nodes too
    map_.clear();
    spare_.clear();
  }
  bool empty() const { return map_.empty(); }
  std::size_t size() const { return map_.size(); }

 private:
  Map map_;
  std::vector<typename Map::node_type> spare_;
};

}  // namespace kb
