//! Generic functions: instances per use, and what verification says of a module that was
//! not elaborated.

const LAP_TWICE: &str = "
func @lap(%x) {
  %i = plus(cartesian_shift(%x, dim = I, offset = 1), cartesian_shift(%x, dim = I, offset = -1))
  return minus(%i, multiplies(2.0, %x))
}

func @twice(%x: tensor<f32, I[0:8]>) {
  return call(@lap, call(@lap, %x))
}
";

#[test]
fn each_use_gets_a_typed_instance_and_the_printer_writes_the_generic_once() {
    let m = strata_verify::parse(LAP_TWICE).expect("elaborates");
    strata_verify::verify(&m).expect("verifies");
    let instances: Vec<_> = m.functions.iter().filter(|(_, f)| f.instance_of.is_some()).collect();
    // One instance per distinct argument type: I[0:8], then I[1:7].
    assert_eq!(instances.len(), 2, "{instances:?}");
    let entries: Vec<_> = m.entries().map(|(_, f)| f.name.clone()).collect();
    assert_eq!(entries, ["twice"]);
    let twice = m.function_by_name("twice").expect("entry");
    let result = m.functions[twice].result().expect("func");
    assert_eq!(m.type_to_string(result), "tensor<f32, I[2:6]>");
    // Printing writes the source again, and the typed form keeps the generic function generic.
    assert_eq!(m.to_string().trim(), LAP_TWICE.trim());
    let typed = m.with_all_types().to_string();
    assert!(typed.contains("func @lap(%x) {"), "{typed}");
    assert!(typed.contains("func @twice(%x: tensor<f32, I[0:8]>) -> tensor<f32, I[2:6]> {"), "{typed}");
    let again = strata_verify::parse(&typed).expect("the typed form elaborates");
    assert_eq!(again.with_all_types().to_string(), typed);
}

#[test]
fn a_generic_use_without_elaboration_is_an_error_not_a_panic() {
    let m = strata_syntax::parse(LAP_TWICE).expect("parses");
    let errs = strata_verify::verify(&m).expect_err("not elaborated");
    assert!(errs.iter().any(|d| d.code == "strata::verify::generic_not_instantiated"), "{errs:?}");
}

#[test]
fn a_generic_entry_is_refused_with_a_reason() {
    let m = strata_verify::parse(LAP_TWICE).expect("elaborates");
    let e = m.entry_by_name("@lap").expect_err("generic");
    assert!(e.contains("`@lap` is generic"), "{e}");
}
