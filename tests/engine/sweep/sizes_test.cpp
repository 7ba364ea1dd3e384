// tests/engine/sweep/sizes_test.cpp — the size sweep's pieces (pt2diff/sizes.h): the --dim forms, the default sizes,
// the inputs resized along a dim, and a sweep with an in-process fault backend (no compiler: quick).
#include <gtest/gtest.h>

#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>

#include "../../test_support.h"
#include "pt2diff/error.h"
#include "pt2diff/inputs.h"
#include "pt2diff/program.h"
#include "pt2diff/sizes.h"

namespace pt2diff {
namespace {

using testing::fixture;

BoundInputs sample(const Program& p) { return bind_inputs(p, load_inputs(fixture("dynamic_batch_inputs.pt"))); }

TEST(ParseSizeDim, SymbolsInputDimsAndErrors) {
  SizeDim d = parse_size_dim("s77=17,2,3,3");
  EXPECT_EQ(d.name, "s77");
  EXPECT_EQ(d.sizes, (std::vector<int64_t>{2, 3, 17}));
  d = parse_size_dim("x.size(0)=4");
  EXPECT_EQ(d.name, "x.size(0)");
  EXPECT_EQ(d.sizes, (std::vector<int64_t>{4}));
  EXPECT_TRUE(parse_size_dim("s77").sizes.empty());  // the default sizes
  for (const char* bad : {"=3", "s77=", "s77=a", "s77=-1", "s77=2,,3"}) {
    try {
      parse_size_dim(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::Usage) << e.what();
    }
  }
}

TEST(DefaultSizes, BoundsPrimesPowersOfTwoAndTheirNeighbours) {
  EXPECT_EQ(default_sizes(2, 64), (std::vector<int64_t>{2, 3, 4, 5, 7, 8, 9, 11, 13, 15, 16, 17, 31, 32, 33, 63, 64}));
  EXPECT_EQ(default_sizes(10, 20), (std::vector<int64_t>{10, 11, 13, 15, 16, 17, 20}));
  const std::vector<int64_t> open = default_sizes(0, std::nullopt);  // unbounded: up to 4096
  EXPECT_EQ(open.front(), 0);
  EXPECT_EQ(open[1], 1);
  EXPECT_EQ(open.back(), 4096);
}

TEST(ResizeInputs, CutOrRepeatedAlongTheDimAndRangeChecked) {
  Program p = load_program(fixture("dynamic_batch.pt2"));
  BoundInputs base = sample(p);
  const at::Tensor x = std::get<at::Tensor>(base.entries.at(0).value);
  ASSERT_EQ(x.size(0), 6);
  BoundInputs three = resize_inputs(p, base, "s77", 3);
  EXPECT_EQ(three.symbols.at("s77"), 3);
  EXPECT_TRUE(at::equal(std::get<at::Tensor>(three.entries.at(0).value), x.narrow(0, 0, 3)));
  BoundInputs eight = resize_inputs(p, base, "s77", 8);
  const at::Tensor x8 = std::get<at::Tensor>(eight.entries.at(0).value);
  EXPECT_TRUE(at::equal(x8.narrow(0, 0, 6), x));
  EXPECT_TRUE(at::equal(x8.narrow(0, 6, 2), x.narrow(0, 0, 2)));  // repeated cyclically: the user's values
  try {
    resize_inputs(p, base, "s77", 65);
    ADD_FAILURE() << "65 accepted outside [2, 64]";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::BadInputs);
    EXPECT_NE(std::string(e.what()).find("outside the range [2, 64]"), std::string::npos) << e.what();
  }
}

TEST(SizeSweep, JudgesEverySizeRefusesOutOfRangeAndLocalizesTheSmallestFailing) {
  Program p = load_program(fixture("dynamic_batch.pt2"));
  SizeSweepOptions o;
  o.diff.compiled = "fault:sigmoid:scale=0.01";
  o.diff.exploded = false;
  o.dims = {parse_size_dim("s77=1,3,4"), parse_size_dim("x.size(1)=8"), parse_size_dim("nope=2")};
  SizeSweepResult s = sweep_sizes(p, sample(p), o);
  ASSERT_EQ(s.points.size(), 3u);
  EXPECT_FALSE(s.points[0].judged);
  EXPECT_NE(s.points[0].refused.find("outside the range [2, 64]"), std::string::npos) << s.points[0].refused;
  for (size_t i : {1u, 2u}) {
    EXPECT_TRUE(s.points[i].judged);
    EXPECT_TRUE(s.points[i].fails) << s.points[i].size;
    EXPECT_GT(s.points[i].worst_ratio, 100) << s.points[i].size;
  }
  EXPECT_EQ(s.points[1].culprit, "sigmoid");  // the smallest failing size, localized
  EXPECT_TRUE(s.points[2].culprit.empty());
  ASSERT_EQ(s.localized.size(), 1u);
  ASSERT_EQ(s.refused_dims.size(), 2u);
  EXPECT_NE(s.refused_dims[0].find("is static (16)"), std::string::npos) << s.refused_dims[0];
  EXPECT_NE(s.refused_dims[1].find("not a dynamic dim"), std::string::npos) << s.refused_dims[1];
  const std::string json = sizes_to_json(s), csv = sizes_to_csv(s), text = sizes_to_text(s);
  EXPECT_NE(json.find("\"culprit\": \"sigmoid\""), std::string::npos);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);
  EXPECT_NE(text.find("2 of 2 sizes judged fail (smallest 3), 1 refused"), std::string::npos) << text;
  EXPECT_NE(sizes_to_html(s).find("<svg"), std::string::npos);
}

TEST(SizeSweep, AGraphWithoutADynamicDimIsAUsageError) {
  Program p = load_program(fixture("mlp.pt2"));
  try {
    sweep_sizes(p, bind_inputs(p, load_inputs(fixture("mlp_inputs.pt"))), {});
    ADD_FAILURE() << "swept a static graph";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Usage);
    EXPECT_NE(std::string(e.what()).find("no dynamic dim to sweep"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pt2diff
