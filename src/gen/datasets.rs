//! The row writers and table definitions of each dataset.

use super::{Dataset, Rng};

type Columns = &'static [(&'static str, &'static str)];

const TRANSACTIONS: Columns =
    &[("tid", "integer"), ("mssinceunixepoch", "integer"), ("amount", "bigint"), ("description", "text")];

const CNAME: Columns = &[("json_blob", "jsonb NOT NULL")];

const STORE_SALES: Columns = &[
    ("date_key", "smallint NOT NULL"),
    ("pos_transaction_number", "integer NOT NULL"),
    ("sales_quantity", "smallint NOT NULL"),
    ("sales_dollar_amount", "smallint NOT NULL"),
    ("cost_dollar_amount", "smallint NOT NULL"),
    ("gross_profit_dollar_amount", "smallint NOT NULL"),
    ("transaction_type", "varchar(16) NOT NULL"),
    ("transaction_time", "time NOT NULL"),
    ("tender_type", "char(6) NOT NULL"),
    ("product_description", "varchar(128) NOT NULL"),
    ("sku_number", "char(12) NOT NULL"),
    ("store_name", "char(10) NOT NULL"),
    ("store_number", "smallint NOT NULL"),
    ("store_city", "varchar(64) NOT NULL"),
    ("store_state", "char(2) NOT NULL"),
    ("store_region", "varchar(64) NOT NULL"),
];

const FLIGHTS: Columns = &[
    ("observed_date_min_as_xxxxdate", "integer NOT NULL"),
    ("observed_date_max_as_xxxxdate", "integer NOT NULL"),
    ("full_weeks_before_departure", "integer NOT NULL"),
    ("carrier_id", "integer NOT NULL"),
    ("searched_cabin_class", "text NOT NULL"),
    ("booking_site_id", "integer NOT NULL"),
    ("booking_site_type_id", "integer NOT NULL"),
    ("is_trip_one_way", "bit NOT NULL"),
    ("trip_origin_airport_id", "integer NOT NULL"),
    ("trip_destination_airport_id", "integer NOT NULL"),
    ("trip_min_stay", "integer"),
    ("trip_price_min", "numeric(20,2) NOT NULL"),
    ("trip_price_max", "numeric(20,2) NOT NULL"),
    ("trip_price_avg", "numeric(38,6) NOT NULL"),
    ("aggregation_count", "integer NOT NULL"),
    ("out_flight_departure_date_as_xxxxdate", "integer NOT NULL"),
    ("out_flight_departure_time_as_xxxxtime", "integer NOT NULL"),
    ("out_flight_time_in_minutes", "integer"),
    ("out_sector_count", "integer NOT NULL"),
    ("out_flight_sector_1_flight_code_id", "integer NOT NULL"),
    ("out_flight_sector_2_flight_code_id", "integer"),
    ("out_flight_sector_3_flight_code_id", "integer"),
    ("home_flight_departure_date_as_xxxxdate", "integer"),
    ("home_flight_departure_time_as_xxxxtime", "integer"),
    ("home_flight_time_in_minutes", "integer"),
    ("home_sector_count", "integer NOT NULL"),
    ("home_flight_sector_1_flight_code_id", "integer"),
    ("home_flight_sector_2_flight_code_id", "integer"),
    ("home_flight_sector_3_flight_code_id", "integer"),
];

const KB_ROWS: Columns = &[("the_col", "char(1024) NOT NULL")];

pub(super) fn columns(d: Dataset) -> Columns {
    match d {
        Dataset::Transactions => TRANSACTIONS,
        Dataset::Cname => CNAME,
        Dataset::StoreSales => STORE_SALES,
        Dataset::Flights => FLIGHTS,
        Dataset::KbRows => KB_ROWS,
    }
}

pub(super) fn write_row(d: Dataset, i: u64, rng: &mut Rng, out: &mut Vec<u8>) {
    match d {
        Dataset::Transactions => transactions(i, rng, out),
        Dataset::Cname => cname(rng, out),
        Dataset::StoreSales => store_sales(i, rng, out),
        Dataset::Flights => flights(rng, out),
        Dataset::KbRows => kb_row(i, rng, out),
    }
}

fn num(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `x \t 10000+x \t rand(500) \t description-x`, exactly the seed's script.
fn transactions(i: u64, rng: &mut Rng, out: &mut Vec<u8>) {
    num(out, i);
    out.push(b'\t');
    num(out, 10_000 + i);
    out.push(b'\t');
    num(out, rng.below(500));
    out.extend_from_slice(b"\tdescription-");
    num(out, i);
    out.push(b'\n');
}

const WORDS: &[&str] = &[
    "photo", "udesk", "mail", "cdn", "static", "shop", "blog", "api", "edge", "img", "login", "news", "video", "data",
    "cloud", "app", "secure", "portal", "media", "store",
];
const TLDS: &[&str] = &["com", "net", "org", "cn", "io", "de", "blog", "wang", "co.uk", "info"];

fn domain(rng: &mut Rng, out: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(2) {
        out.extend_from_slice(rng.pick(WORDS).as_bytes());
        if rng.one_in(2) {
            num(out, rng.below(100_000));
        }
        out.push(b'.');
    }
    out.extend_from_slice(rng.pick(TLDS).as_bytes());
}

/// `{"timestamp":"…","name":"…","type":"cname","value":"…"}`; about one
/// line in a thousand carries JSON escapes (`\u00e9`, `\\`), which must
/// arrive byte for byte.
fn cname(rng: &mut Rng, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"timestamp\":\"");
    num(out, 1_593_366_733 + rng.below(3_000));
    out.extend_from_slice(b"\",\"name\":\"");
    num(out, rng.below(100_000));
    out.push(b'.');
    domain(rng, out);
    if rng.one_in(1000) {
        out.extend_from_slice(b"-caf\\u00e9\\\\x");
    }
    out.extend_from_slice(b"\",\"type\":\"cname\",\"value\":\"");
    let hash = rng.next_u64();
    if rng.one_in(3) {
        out.extend_from_slice(format!("{hash:016x}.").as_bytes());
    }
    domain(rng, out);
    out.extend_from_slice(b"\"}\n");
}

const PRODUCTS: &[&str] =
    &["chicken noodle soup", "golf clubs", "brandy", "paper towels", "coffee", "batteries", "dog food"];
const CITIES: &[(&str, &str, &str)] = &[
    ("Lancaster", "CA", "West"),
    ("Boston", "MA", "East"),
    ("Austin", "TX", "South"),
    ("Chicago", "IL", "MidWest"),
    ("Portland", "OR", "West"),
];

/// CSV; product descriptions sometimes need quoting (commas, quotes) and,
/// rarely, hold a newline, as exported descriptions do.
fn store_sales(i: u64, rng: &mut Rng, out: &mut Vec<u8>) {
    let qty = 1 + rng.below(9);
    let price = 10 + rng.below(90);
    let cost = price * (30 + rng.below(40)) / 100;
    for n in [1 + rng.below(1000), i, qty, qty * price, qty * cost, qty * (price - cost)] {
        num(out, n);
        out.push(b',');
    }
    out.extend_from_slice(rng.pick(&["purchase", "return"]).as_bytes());
    out.extend_from_slice(format!(",{:02}:{:02}:{:02},", rng.below(24), rng.below(60), rng.below(60)).as_bytes());
    out.extend_from_slice(rng.pick(&["Cash", "Credit", "Check"]).as_bytes());
    let brand = rng.below(10);
    let product = rng.pick(PRODUCTS);
    match rng.below(50) {
        0 => out.extend_from_slice(format!(",\"Brand #{brand} \"\"deluxe\"\" {product}, 12 oz\",").as_bytes()),
        1 if rng.one_in(100) => out.extend_from_slice(format!(",\"Brand #{brand} {product}\ngift set\",").as_bytes()),
        _ => out.extend_from_slice(format!(",Brand #{brand} {product},").as_bytes()),
    }
    let store = 1 + rng.below(99);
    let (city, state, region) = CITIES[rng.below(CITIES.len() as u64) as usize];
    out.extend_from_slice(format!("SKU-#{brand},Store{store},{store},{city},{state},{region}\n").as_bytes());
}

/// 29 tab-separated columns; one-way trips have `\N` for every home column.
fn flights(rng: &mut Rng, out: &mut Vec<u8>) {
    let day = 17_000 + rng.below(400);
    let one_way = rng.one_in(3);
    let price = 50 + rng.below(2000);
    let mut fields: Vec<String> = vec![
        day.to_string(),
        (day + rng.below(7)).to_string(),
        rng.below(52).to_string(),
        (1 + rng.below(900)).to_string(),
        rng.pick(&["economy", "premium", "business", "first"]).to_string(),
        (1 + rng.below(300)).to_string(),
        (1 + rng.below(5)).to_string(),
        if one_way { "1" } else { "0" }.to_string(),
        (1 + rng.below(4000)).to_string(),
        (1 + rng.below(4000)).to_string(),
        opt(rng, !one_way, 30),
        format!("{price}.{:02}", rng.below(100)),
        format!("{}.{:02}", price + rng.below(500), rng.below(100)),
        format!("{}.{:06}", price + rng.below(250), rng.below(1_000_000)),
        (1 + rng.below(40)).to_string(),
        (day + 7 + rng.below(300)).to_string(),
        rng.below(1440).to_string(),
        opt(rng, true, 900),
    ];
    let sectors = 1 + rng.below(3);
    fields.push(sectors.to_string());
    for s in 1..=3 {
        fields.push(opt(rng, s <= sectors, 90_000));
    }
    fields.push(opt(rng, !one_way, 20_000));
    fields.push(opt(rng, !one_way, 1440));
    fields.push(opt(rng, !one_way, 900));
    let home_sectors = if one_way { 0 } else { 1 + rng.below(3) };
    fields.push(home_sectors.to_string());
    for s in 1..=3 {
        fields.push(opt(rng, s <= home_sectors, 90_000));
    }
    out.extend_from_slice(fields.join("\t").as_bytes());
    out.push(b'\n');
}

fn opt(rng: &mut Rng, present: bool, below: u64) -> String {
    if present {
        (1 + rng.below(below)).to_string()
    } else {
        "\\N".to_string()
    }
}

/// 1 kB rows: a row number and letters, 1024 characters.
fn kb_row(i: u64, rng: &mut Rng, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(format!("{i:010}-").as_bytes());
    let letter = b'a' + rng.below(26) as u8;
    out.resize(start + 1024, letter);
    out.push(b'\n');
}
