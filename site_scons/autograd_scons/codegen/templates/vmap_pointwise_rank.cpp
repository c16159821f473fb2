const int64_t rank = std::max<int64_t>({${ranks}});
