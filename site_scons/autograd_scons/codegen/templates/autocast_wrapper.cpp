// ${op} under Autocast${device}: ATen's ${policy} policy, by ATen's own
// wrapper (ATen/autocast_mode.h): the running autocast's dtype, cached casts
// (a weight cast once per autocast region), float64 left as it is.
using ${name} = at::autocast::WrapFunction<
    at::autocast::CastPolicy::${policy}, c10::DeviceType::${device},
    ${signature}, ${redispatch_signature}, &${redispatch}>::type;
